# The documents that have one source: docs/json.md from docs/json-schema.json, the schema's
# member names from user/model/json_keys.h (the writers and the reader name members there), and
# docs/usage.md's option lists from --help; and the links between README.md, HACKING.md and docs/,
# which must all lead somewhere.
require "json"

test "docs: docs/json.md is what docs/json-schema.json gives" do
  out, st = Open3.capture2e(File.join(ROOT, "scripts", "json-doc.rb"), "--check")
  check(st.success?, out)
end

test "docs: every JSON key is in the schema, and the schema names no other" do
  # clang-format may break "X(name)" across a continued line: join the lines first.
  keys = File.read(File.join(ROOT, "user", "model", "json_keys.h")).gsub(/\\\n/, " ")
             .scan(/\bX\(\s*(\w+)\s*\)/).flatten
  named = []
  walk = lambda do |node|
    case node
    when Hash
      named.concat(node["properties"].keys) if node["properties"].is_a?(Hash)
      node.each_value { |v| walk.call(v) }
    when Array then node.each { |v| walk.call(v) }
    end
  end
  schema = JSON.parse(File.read(File.join(ROOT, "docs", "json-schema.json")))
  walk.call(schema)
  groups = %w[gc heap classes stacks probes] # layout.groups' members: the proof's group names
  check((keys - named).empty?, "keys not in the schema: #{(keys - named).join(', ')}")
  extra = named.uniq - keys - groups
  check(extra.empty?, "schema members json_keys.h does not declare: #{extra.join(', ')}")
end

test "docs: every relative link and #anchor of README, HACKING and docs/ resolves" do
  out, st = Open3.capture2e(File.join(ROOT, "scripts", "check-links.rb"))
  check(st.success?, out)
end

test "docs: docs/usage.md's option lists are what each subcommand's --help prints" do
  out, st = Open3.capture2e(File.join(ROOT, "scripts", "usage-doc.rb"), "--check", RBM)
  check(st.success?, out)
end
