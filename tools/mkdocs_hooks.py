"""MkDocs hooks (``hooks:`` in mkdocs.yml): add the generated reference pages to the build.

The CLI reference comes from spin's argparse parser, the scenario-file reference from the TOML
schema's pydantic models and the top-level API page from ``spin.__all__``
(``tools/reference_pages.py``), at every build, so they cannot fall behind the code. The plots
gallery's pictures are drawn from tiny runs at every build too (``tools/plot_gallery.py``), so
the repository holds no PNG.
"""
from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:    # mkdocs loads this file by path: spin and tools import from ROOT
    sys.path.insert(0, str(ROOT))

from tools.plot_gallery import FIGURES, GALLERY_DIR, png
from tools.reference_pages import (
    API_INDEX_PAGE,
    CLI_PAGE,
    CONFIG_PAGE,
    api_index_markdown,
    cli_reference_markdown,
    config_reference_markdown,
)


def on_files(files, config):
    for path, render in ((CLI_PAGE, cli_reference_markdown),
                         (CONFIG_PAGE, config_reference_markdown),
                         (API_INDEX_PAGE, api_index_markdown)):
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=render()))
    for name in FIGURES:
        files.append(File.generated(config, f"{GALLERY_DIR}/{name}", content=png(name)))
    return files
