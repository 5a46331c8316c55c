"""Pieces that several webapp apps share and that belong to none of them: they import no app,
so that any app may import them without an import cycle (docs/architecture.md, "Apps and their
facades")."""
