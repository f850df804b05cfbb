"""Program → Program passes; each module holds one pass `run(program) -> (program, changed)`."""
