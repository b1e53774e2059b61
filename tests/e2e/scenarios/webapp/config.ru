# The leaky Sinatra app (app.rb) for puma.
require_relative "app"
run PostsApp
