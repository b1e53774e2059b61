# A census checked exactly against the target's own counts (scenarios/census_target.rb), for the
# tests that read a heap through another layout than the census tests do.
require_relative "census_lib"
require_relative "lib"

# The census of pid checked exactly against the target's own counts (census_target.rb).
def check_census_exact(io, _pid, out, what)
  c = rbm_json(out)
  got = CensusDriver.ask(io, "counts")
  check_eq(c["heap"]["slots"], got["counts"]["TOTAL"], "#{what}: slots = count_objects TOTAL")
  check_eq(c["heap"]["free"], got["counts"]["FREE"], "#{what}: free = count_objects FREE")
  d = CensusDriver.type_diffs(c["types"], got["counts"])
  check(d.empty?, "#{what}: live per type differs from count_objects: #{d.join(', ')}")
  %w[Alpha Beta Gamma].each do |name|
    row = c["classes"].find { |r| r["name"] == name } or raise Failure, "#{what}: no #{name}"
    check_eq(row["live"], got["classes"][name]["each_object"], "#{what}: #{name} live")
  end
  c
end

