# A program whose output must be the same traced and untraced.
words = %w[alpha beta gamma delta]
acc = Hash.new(0)
20_000.times { |i| acc[words[i % 4]] += i.to_s.length }
acc.sort.each { |k, v| puts "#{k}=#{v}" }
obj = Struct.new(:a, :b).new(1, "two")
p obj.to_a, ObjectSpace.respond_to?(:each_object), Class.new.name
$stderr.puts "stderr line"
exit 3
