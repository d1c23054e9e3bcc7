"""train package (see DESIGN.md)."""

__all__: list[str] = []
