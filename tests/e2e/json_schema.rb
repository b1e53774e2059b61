# Validates rbmemtrace's JSON against docs/json-schema.json: the subset of JSON Schema the
# schema uses ($ref into $defs, type, properties, required, additionalProperties, items, enum,
# oneOf, minimum).  Every report an end-to-end test reads goes through it (lib.rb).
require "json"

module JsonSchema
  SCHEMA_PATH = File.expand_path("../../docs/json-schema.json", __dir__)

  module_function

  def schema
    @schema ||= JSON.parse(File.read(SCHEMA_PATH))
  end

  # The problems of value against the schema (the whole one, or the definition named def_name).
  def problems(value, def_name = nil)
    errors = []
    node = def_name ? { "$ref" => "#/$defs/#{def_name}" } : schema
    walk(value, node, "$", errors)
    errors
  end

  # The problems of value against another schema (speedscope's), in the same subset.
  def problems_in(other, value)
    saved, @schema = @schema, other
    problems(value)
  ensure
    @schema = saved
  end

  def resolve(node)
    node = schema.dig("$defs", node["$ref"].delete_prefix("#/$defs/")) while node.key?("$ref")
    node
  end

  TYPES = {
    "object" => ->(v) { v.is_a?(Hash) }, "array" => ->(v) { v.is_a?(Array) },
    "string" => ->(v) { v.is_a?(String) }, "integer" => ->(v) { v.is_a?(Integer) },
    "number" => ->(v) { v.is_a?(Numeric) }, "boolean" => ->(v) { v == true || v == false },
    "null" => ->(v) { v.nil? },
  }.freeze

  def walk(value, node, at, errors)
    node = resolve(node)
    if (alts = node["oneOf"])
      found = alts.map { |alt| e = []; walk(value, alt, at, e); e }
      matching = found.count(&:empty?)
      return if matching == 1

      errors << "#{at}: matches #{matching} of the oneOf alternatives, not 1"
      errors.concat(found.min_by(&:size)) if matching.zero? # the nearest one's problems
      return
    end
    if (types = node["type"]) && Array(types).none? { |t| TYPES.fetch(t).call(value) }
      errors << "#{at}: #{value.inspect[0, 80]} is not #{Array(types).join(' or ')}"
      return
    end
    errors << "#{at}: #{value.inspect} is not one of #{node['enum']}" if node["enum"] && !node["enum"].include?(value)
    errors << "#{at}: #{value} is below #{node['minimum']}" if node["minimum"] && value.is_a?(Numeric) && value < node["minimum"]
    walk_object(value, node, at, errors) if value.is_a?(Hash)
    value.each_with_index { |v, i| walk(v, node["items"], "#{at}[#{i}]", errors) } if value.is_a?(Array) && node["items"]
  end

  def walk_object(value, node, at, errors)
    props = node["properties"] || {}
    (node["required"] || []).each { |k| errors << "#{at}: lacks #{k}" unless value.key?(k) }
    value.each do |k, v|
      if props.key?(k)
        walk(v, props[k], "#{at}.#{k}", errors)
      elsif node["additionalProperties"] == false
        errors << "#{at}: #{k} is not in the schema"
      elsif node["additionalProperties"].is_a?(Hash)
        walk(v, node["additionalProperties"], "#{at}.#{k}", errors)
      end
    end
  end
end
