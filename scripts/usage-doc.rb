#!/usr/bin/env ruby
# docs/usage.md's option lists, from the binary's own --help (argp's tables, the one source), as
# scripts/man-page.sh makes the man pages' OPTIONS; and every option the documents name, checked.
#   scripts/usage-doc.rb [BINARY]          rewrite the generated blocks of docs/usage.md
#   scripts/usage-doc.rb --check [BINARY]  fail if they differ from what BINARY prints, if a
#                                          subcommand has no block, or if README.md, HACKING.md,
#                                          docs/*.md or man/*.scd name an option no --help lists
#
# A block is the text between a line "<!-- BEGIN rbmemtrace ARGS --help -->" and the next
# "<!-- END -->": the output of `rbmemtrace ARGS --help` (for the bare `rbmemtrace --help`, only
# its list of subcommands: the rest is trace's, which has its own block).  The prose around the
# blocks is written by hand.
require "open3"

ROOT = File.expand_path("..", __dir__)
DOC = File.join(ROOT, "docs", "usage.md")
BEGIN_RE = /\A<!-- BEGIN rbmemtrace ?(.*?) --help -->\n\z/
END_LINE = "<!-- END -->\n"

# Options of other programs that the documents show: what a named option may be besides ours.
FOREIGN = {
  "--check" => "scripts' own (json-doc.rb, gen-ruby-tables.sh)",
  "--list" => "scripts/rubies.sh --list",
  "--forever" => "examples/leaky_app.rb --forever",
  "--fork" => "unshare(1)", "--mount-proc" => "unshare(1)",
  "--multiversion" => "debuginfod(8)", "--purge" => "apt-get(8)", "--warnings" => "man(1)",
  "--serve" => "the scenario of docs/continuous.md",
  "--decompress-debug-sections" => "objcopy(1)", "--debug-dump" => "readelf(1)",
  "--pid" => "podman run", "--privileged" => "podman run", "--cap-add" => "podman run",
  "--cap-drop" => "podman run", "--network" => "podman run", "--read-only" => "podman run",
  "--cpus" => "podman run", "--memory" => "podman run", "--rm" => "podman run",
  "--profile" => "kubectl debug", "--image" => "kubectl debug", "--from-file" => "kubectl create",
  "--for" => "kubectl wait", "--timeout" => "kubectl wait", "--now" => "systemctl enable",
  "--variant" => "mmdebstrap(1)", "--can-run" => "scripts/podman.sh --can-run",
  "--runtime" => "podman(1)", "--cgroup-manager" => "podman(1)", "--filter" => "podman-ps(1)",
  "--field-selector" => "kubectl-get(1)", "--cacert" => "curl(1)",
  "--hostname" => "podman-run(1)", "--cgroup-parent" => "podman-run(1)",
}.freeze

check = ARGV.delete("--check")
binary = ARGV.fetch(0, File.join(ROOT, "rbmemtrace"))

def help(binary, args)
  # LC_ALL=C: glibc translates argp's own lines; argp wraps at ARGP_HELP_FMT's rmargin.
  env = { "LC_ALL" => "C", "ARGP_HELP_FMT" => "rmargin=79" }
  out, err, status = Open3.capture3(env, binary, *args, "--help")
  abort "usage-doc.rb: #{binary} #{args.join(' ')} --help failed: #{err}" unless status.success?
  out
end

# `rbmemtrace --help` lists the subcommands, then prints trace's help: the list alone.
def subcommand_list(text)
  text[/\A(?:.*\n)*?Subcommands:\n(?:  \S.*\n)+/] or abort "usage-doc.rb: no subcommands in --help"
end

def subcommands(binary)
  subcommand_list(help(binary, [])).lines.grep(/^  \S/).map { |l| l.split.first }
end

def block(binary, args)
  text = help(binary, args)
  text = subcommand_list(text) if args.empty?
  "```\n#{text.chomp}\n```\n"
end

# The document with each block replaced by what the binary prints now; the subcommands blocked.
def generate(binary, source)
  out = +""
  shown = []
  lines = source.lines
  until lines.empty?
    line = lines.shift
    out << line
    next unless (m = BEGIN_RE.match(line))

    args = m[1].split
    shown << args.first if args.any?
    lines.shift until lines.empty? || lines.first == END_LINE
    abort "usage-doc.rb: #{line.chomp} has no #{END_LINE.chomp}" if lines.empty?
    out << block(binary, args) << lines.shift
  end
  [out, shown]
end

# The options the documents name (`--opt`, *--opt*) that no subcommand's --help lists.
def unknown_options(binary, subs)
  known = subs.flat_map { |s| help(binary, [s]).scan(/^ {1,6}(?:-\S, )?(--[a-z][a-z-]*)/).flatten }
  known += %w[--help --version --usage]
  files = %w[README.md HACKING.md].map { |f| File.join(ROOT, f) } +
          Dir[File.join(ROOT, "docs", "*.md")] + Dir[File.join(ROOT, "man", "*.scd")]
  files.flat_map do |f|
    named = File.read(f).scan(/(?<![\w-])--[a-z][a-z-]*[a-z]/).uniq
    (named - known - FOREIGN.keys).map { |o| "#{f.delete_prefix("#{ROOT}/")}: #{o}" }
  end
end

source = File.read(DOC)
generated, shown = generate(binary, source)
subs = subcommands(binary)
problems = []
problems << "docs/usage.md has no block for #{(subs - shown).join(', ')}" unless (subs - shown).empty?
problems << "docs/usage.md has blocks of no subcommand: #{(shown - subs).join(', ')}" unless (shown - subs).empty?

if check
  problems << "docs/usage.md is not what #{binary} --help prints (scripts/usage-doc.rb rewrites it)" if generated != source
  unknown_options(binary, subs).each { |u| problems << "an option no --help lists: #{u}" }
  problems.each { |p| warn "usage-doc.rb: #{p}" }
  exit(problems.empty? ? 0 : 1)
end
File.write(DOC, generated) if generated != source
problems.each { |p| warn "usage-doc.rb: #{p}" }
exit(problems.empty? ? 0 : 1)
