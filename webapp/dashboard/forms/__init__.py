"""Dashboard forms: they parse and shape input; rules live in the domain actions."""
