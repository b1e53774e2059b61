# End-to-end tests: real Ruby programs under rbmemtrace, checked against the
# ground truth each program computes about itself.  Needs root and BPF.
#   ruby tests/e2e/run.rb [NAME_FILTER]
# Each test_*.rb beside this file holds the tests of one concern.
require_relative "lib"

Dir[File.join(__dir__, "test_*.rb")].sort.each { |f| require f }

puts "#{$passed} passed, #{$failed} failed"
exit($failed.zero? ? 0 : 1)
