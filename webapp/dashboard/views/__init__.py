"""Dashboard views, one module per area; each view parses input, calls one action, renders."""
