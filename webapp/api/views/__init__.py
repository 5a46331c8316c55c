"""REST views: parse input with a serializer, call one action, shape the answer."""
