# Preloaded with -r into the program tests/e2e/test_real.rb traces: Ruby's own per-class count of
# every allocation and free (rbm_truth.c), from the main script's first line to the last at_exit
# handler, written as JSON to $RBM_TRUTH.  Built by `make e2e` into .output/truth_ext/.
require File.expand_path("../../../.output/truth_ext/rbm_truth.so", __dir__)

out = ENV.fetch("RBM_TRUTH")
# Registered before the program registers any: runs last, just before ruby_sig_finalize.
at_exit { RbmTruth.finish(out) }
# The count starts at the main script's ($0's) first line.
RbmTruth.arm($0)
