# A leak whose frames are named to break an HTML page: a method and a file name holding
# </script>, quotes, javascript: and bidi characters (and the class too, on Rubies that let
# an anonymous class take any name: Module#set_temporary_name, 3.3 on).  HTML_LEAK_N
# HtmlLeak objects are kept along them; the truth says the strings and the count.
require_relative "../scenario"

EVIL = "</script><script>document.title='pwned'</script>\"'><img src=x onerror=alert(1)> " \
       "javascript:alert(1) \u202Egnp.exe"

class HtmlLeak; end

KEPT = []
# Never a constant's: that would name it.
$evil_class = Class.new
$evil_class.set_temporary_name("Evil#{EVIL}") if $evil_class.respond_to?(:set_temporary_name)

HtmlLeak.define_method(EVIL) { |n| n.times { KEPT << HtmlLeak.new << $evil_class.new } }
# The file name of the frame that calls it: an eval's.
eval("def keep_leak(n) = HtmlLeak.new.send(EVIL, n)", binding, "#{EVIL}.rb", 1)

N = Integer(ENV.fetch("HTML_LEAK_N", "3000"))
Scenario.run({ "HtmlLeak" => HtmlLeak }) do
  keep_leak(N)
  { "evil" => EVIL, "evil_class" => $evil_class.name, "n" => N }
end
