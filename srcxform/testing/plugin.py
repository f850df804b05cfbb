"""pytest plugin: provides the `gradcheck` fixture."""
