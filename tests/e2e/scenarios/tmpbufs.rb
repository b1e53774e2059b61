# Array#combination of 200 elements keeps its 201 indexes in a tmp buffer
# (ALLOCV_N past 1 KiB): rb_alloc_tmp_buffer_with_count makes an
# imemo tmpbuf, stores it through its first argument and returns the
# malloc'd buffer.  Ruby's own imemo count says how many were made.
require "objspace"
require_relative "../scenario"

ROUNDS = 3000

Scenario.run({}) do
  a = (1..200).to_a
  GC.start
  GC.disable
  before = ObjectSpace.count_imemo_objects[:imemo_tmpbuf].to_i
  ROUNDS.times { a.combination(200) { } }
  made = ObjectSpace.count_imemo_objects[:imemo_tmpbuf].to_i - before
  GC.enable
  { "tmpbufs_made" => made }
end
