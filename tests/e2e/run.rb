# End-to-end tests: real Ruby programs under rbmemtrace, checked against the
# ground truth each program computes about itself.  Needs root and BPF.
#   ruby tests/e2e/run.rb [NAME_FILTER]
# (test_image.rb only when RBM_E2E_FILES names it: make test-image)
# Each test_*.rb beside this file holds the tests of one concern.  With
# RBM_E2E_RUBY=DIR/bin/ruby (a test Ruby of make rubies), only the files
# whose tests depend on the traced Ruby's version run, against that Ruby;
# the census tests go over every test Ruby themselves.  RBM_E2E_FILES="test_a.rb test_b.rb" runs
# only those files (scripts/test-sanitize.sh runs a few under the sanitizer build).
require_relative "lib"

VERSIONED = %w[test_trace.rb test_default_mode.rb test_why.rb test_starts.rb test_verdict.rb test_hostile.rb
               test_watch.rb].freeze
# A series's two test builds (Debian's, ruby-build's) differ in where their layout comes from
# (tables and code, or DWARF) and in the chroot Debian's runs in; both probe by uprobes.  The
# census, layout and fleet tests prove that on every test Ruby from the host's run; beyond them
# one build of each series runs the versioned files, the other test_trace.rb's exact counts
# (CI's time: 20 minutes).  Alternated so that each kind of build runs them all once.
BUILD_ONLY = %w[test_trace.rb].freeze
# Run only when RBM_E2E_FILES names them: test_image.rb needs make image first (make test-image).
OWN_TARGET = %w[test_image.rb].freeze

def whole_suite?(label)
  (label.start_with?("3.3.") == label.end_with?("-ruby-build"))
end

files = Dir[File.join(__dir__, "test_*.rb")].sort
files.reject! { |f| OWN_TARGET.include?(File.basename(f)) } unless ENV["RBM_E2E_FILES"]
# A build that runs test_trace.rb alone: its sampled trace is the series's other build's.
BUILD_ONLY_RUN = ENV["RBM_E2E_RUBY"] && !whole_suite?(TARGET_LABEL) && !ENV["RBM_E2E_FILES"]

# A test that such a build leaves to the series's other one: its sampler, maps and compaction
# do not depend on where the layout came from, only its exact counts do.
def suite_only!
  raise NotApplicable, "run on the series's other build (layout-independent)" if BUILD_ONLY_RUN
end
if ENV["RBM_E2E_RUBY"]
  chosen = BUILD_ONLY_RUN ? BUILD_ONLY : VERSIONED
  puts "note   #{TARGET_LABEL}: #{chosen.join(' ')} (the other versioned files run on the series's other build)" unless chosen == VERSIONED
  files.select! { |f| chosen.include?(File.basename(f)) }
end
if (only = ENV["RBM_E2E_FILES"])
  wanted = only.split
  unknown = wanted - files.map { |f| File.basename(f) }
  abort "RBM_E2E_FILES: no such test file: #{unknown.join(' ')}" unless unknown.empty?
  files.select! { |f| wanted.include?(File.basename(f)) }
end
files.each { |f| require f }

puts "#{$passed} passed, #{$failed} failed"
exit($failed.zero? ? 0 : 1)
