# One compile unit of an ELF file's DWARF, as `readelf --debug-dump=info` prints it: its
# top-level DIEs (types) and their children (members), each with where its DW_AT_type is in the
# file, so that a test can rewire a type reference in the file's bytes (test_faults.rb plants
# cyclic types in a libruby this way).  The file's .debug_info must not be compressed
# (objcopy --decompress-debug-sections first).
require "open3"

class DwarfUnit
  Die = Struct.new(:off, :depth, :tag, :name, :type, :type_at, :children, :declaration)

  attr_reader :header, :info_offset

  # path: the ELF file; cu_name: the unit's DW_AT_name ("gc.c"), or its last component.
  def initialize(path, cu_name)
    @info_offset = debug_info_offset(path)
    @header, die = unit_of(path, cu_name)
    @top = {}
    read_dies(path, die)
  end

  # The top-level DIE of that tag ("typedef", "structure_type") and name that defines it (the
  # first one, not a declaration).
  def top(tag, name)
    @top[["DW_TAG_#{tag}", name]] or raise "no DW_TAG_#{tag} #{name} in the unit at 0x#{@header.to_s(16)}"
  end

  def member(die, name)
    die.children.find { |c| c.name == name } or raise "no member #{name} in #{die.name}"
  end

  # The DIE at a .debug_info offset, as read (a top-level one or a child of one).
  def at(off) = @by_off.fetch(off)

  # die's DW_AT_type made to refer to target, in elf (the file's bytes).  DW_FORM_ref4 counts from
  # the unit's header: the four bytes must say die.type that way, or the form is another.
  def retype!(elf, die, target)
    at = @info_offset + die.type_at
    was = elf.unpack1("L<", offset: at)
    raise "DW_AT_type of 0x#{die.off.to_s(16)} is not a DW_FORM_ref4 (0x#{was.to_s(16)})" unless was == die.type - @header

    elf[at, 4] = [target.off - @header].pack("L<")
  end

  private

  def debug_info_offset(path)
    line = readelf("-SW", path).lines.find { |l| l =~ /\]\s+\.debug_info\s/ } or raise "#{path}: no .debug_info"
    f = line.sub(/.*\]\s+/, "").split # name type address offset size entsize [flags] link info align
    raise "#{path}: .debug_info is compressed" if f.size > 9 && f[6].include?("C")

    f[3].hex
  end

  # [the unit's header offset, its DIE's offset]
  def unit_of(path, cu_name)
    header = die = nil
    readelf("--debug-dump=info", "--dwarf-depth=1", path).each_line do |l|
      if (m = l.match(/Compilation Unit @ offset (0x\h+|0):/))
        header = m[1].hex
      elsif (m = l.match(/^ <0><(\h+)>/))
        die = m[1].hex
      elsif (m = l.match(/DW_AT_name\s*:.*: (\S+)$/)) && (m[1] == cu_name || m[1].end_with?("/#{cu_name}"))
        return [header, die]
      end
    end
    raise "#{path}: no compile unit #{cu_name}"
  end

  # The unit's DIEs two levels down, read as readelf streams them; stops at the next unit.
  def read_dies(path, start)
    @by_off = {}
    parents = []
    cur = nil
    IO.popen(["readelf", "--debug-dump=info", "--dwarf-depth=3", "--dwarf-start=#{start}", path]) do |io|
      io.each_line do |l|
        if (m = l.match(/^ <(\d+)><(\h+)>: Abbrev Number: \d+ \(DW_TAG_(\w+)\)/))
          depth = m[1].to_i
          break if depth.zero? && cur

          cur = Die.new(m[2].hex, depth, "DW_TAG_#{m[3]}", nil, nil, nil, [])
          @by_off[cur.off] = cur
          parents[depth] = cur
          parents[depth - 1].children << cur if depth.positive? && parents[depth - 1]
        elsif l.start_with?("  Compilation Unit @")
          break
        elsif cur && (m = l.match(/^\s+<(\h+)>\s+DW_AT_(\w+)\s*:\s*(.*)$/))
          attribute(cur, m[1].hex, m[2], m[3])
        end
      end
      Process.kill("TERM", io.pid) rescue nil
    end
    @by_off.each_value { |d| @top[[d.tag, d.name]] ||= d if d.depth == 1 && d.name && !d.declaration }
  end

  def attribute(die, at, name, value)
    case name
    when "name" then die.name = value.sub(/\A\((indirect|indexed) (line )?string[^)]*\): /, "")
    when "type"
      die.type = value[/<0x(\h+)>/, 1]&.hex
      die.type_at = at
    when "declaration" then die.declaration = true
    end
  end

  def readelf(*args)
    out, err, status = Open3.capture3("readelf", *args)
    raise "readelf #{args.join(' ')}: #{err}" unless status.success?

    out
  end
end
