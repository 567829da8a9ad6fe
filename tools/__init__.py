"""Developer tools that are not part of the installed package (the docs build's generators)."""
