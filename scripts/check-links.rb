#!/usr/bin/env ruby
# Checks that every relative link of the documents resolves: the file (or folder) it names exists
# in the tree, and its #anchor is a heading of that file as GitHub names it (lower case, spaces
# to "-", punctuation dropped, "-1", "-2"... for a repeated heading).  Links to other sites
# (http:, mailto:...) are not followed.  Run by `make check`.
#   scripts/check-links.rb              README.md, HACKING.md and docs/*.md
#   scripts/check-links.rb FILE.md...   those files
# Prints each broken link as FILE:LINE: [text](target): why, and exits 1 if there is any.
require "set"

ROOT = File.expand_path("..", __dir__)

# Lines outside fenced code blocks, with their numbers; inline code spans blanked.
def prose_lines(text)
  fence = nil
  text.each_line.with_index(1).filter_map do |line, n|
    if (m = line.match(/\A {0,3}(`{3,}|~{3,})/))
      if fence.nil?
        fence = m[1]
        next
      elsif m[1][0] == fence[0] && m[1].size >= fence.size
        fence = nil
        next
      end
    end
    next if fence

    [line.gsub(/(`+)(?:(?!\1).)+?\1/) { |s| " " * s.size }, n]
  end
end

# GitHub's anchor for a heading's text (github-slugger): inline markup reduced to its text, lower
# case, every character that is not a letter, digit, mark, "_", "-" or space dropped, spaces to "-".
def slug(heading)
  text = heading.gsub(/!?\[([^\]]*)\]\([^)]*\)/, '\1').gsub(/<[^>]+>/, "")
  text.downcase.gsub(/[^\p{L}\p{Nd}\p{Nl}\p{M}\p{Pc}\- ]/, "").tr(" ", "-")
end

# Every anchor a Markdown file defines: its headings (ATX and setext) and HTML ids.
def anchors_of(path)
  @anchors ||= {}
  @anchors[path] ||= begin
    seen = Hash.new(0)
    found = Set.new
    lines = prose_lines(File.read(path))
    add = lambda do |heading|
      base = slug(heading.strip)
      found << (seen[base].zero? ? base : "#{base}-#{seen[base]}")
      seen[base] += 1
    end
    raw = File.readlines(path)
    lines.each_with_index do |(line, n), i|
      if (m = line.match(/\A {0,3}\#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/))
        add.call(raw[n - 1].match(/\A {0,3}\#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/)[1])
      elsif line.match?(/\A {0,3}(=+|-+)[ \t]*$/) && i.positive? && lines[i - 1][1] == n - 1 &&
            !lines[i - 1][0].strip.empty? && !lines[i - 1][0].match?(/\A {0,3}([#>|*-]|\d+\.)/)
        add.call(raw[n - 2])
      end
      line.scan(/<a\s[^>]*(?:name|id)="([^"]+)"/) { |(id)| found << id }
    end
    found
  end
end

# [text](target "title"), ![alt](target), [text](<target>) and [label]: target definitions.
LINK = /(!?\[(?:[^\[\]]|\[[^\]]*\])*\])\(\s*(<[^>]*>|(?:[^()\s]|\([^()]*\))*)(?:\s+"[^"]*")?\s*\)/
DEFINITION = /\A {0,3}\[[^\]]+\]:\s+(<[^>]*>|\S+)/

def problem(file, target)
  target = target.delete_prefix("<").delete_suffix(">")
  return nil if target.match?(/\A[a-z][a-z0-9+.-]*:/i) # another site, mailto:...

  path, anchor = target.split("#", 2)
  path = path.gsub(/%([0-9a-f]{2})/i) { Regexp.last_match(1).hex.chr }
  dest = path.empty? ? file : File.expand_path(path, File.dirname(file))
  return "outside the repository" unless path.empty? || dest == ROOT || dest.start_with?("#{ROOT}/")
  return "#{relative(dest)} does not exist" unless File.exist?(dest)
  return nil if anchor.nil?
  return "#{relative(dest)} is a folder: no anchor there" if File.directory?(dest)

  unless dest.end_with?(".md")
    return nil if anchor.match?(/\AL\d+(-L\d+)?\z/) # a line of a source file

    return "##{anchor}: #{relative(dest)} is not Markdown, it has no headings"
  end
  return nil if anchors_of(dest).include?(anchor)

  "no heading of #{relative(dest)} has the anchor ##{anchor}"
end

def relative(path) = path == ROOT ? "." : path.delete_prefix("#{ROOT}/")

files = if ARGV.empty?
          (%w[README.md HACKING.md] + Dir.glob("docs/*.md", base: ROOT).sort).map { |f| File.join(ROOT, f) }
        else
          ARGV.map { |f| File.expand_path(f) }
        end
broken = []
count = 0
files.each do |file|
  abort "check-links: #{file}: no such file" unless File.file?(file)
  prose_lines(File.read(file)).each do |line, n|
    targets = line.scan(LINK).map { |text, target| ["#{text}(#{target})", target] }
    targets << ["[...]: #{Regexp.last_match(1)}", Regexp.last_match(1)] if line.match(DEFINITION)
    targets.each do |shown, target|
      count += 1
      why = problem(file, target)
      broken << "  #{relative(file)}:#{n}: #{shown}: #{why}" if why
    end
  end
end
unless broken.empty?
  warn "check-links: #{broken.size} of the #{count} links in #{files.size} documents do not resolve:"
  warn broken
  exit 1
end
