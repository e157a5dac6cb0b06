"""Render a Textual SVG screenshot to PNG with local monospace fonts (never a web font)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

LOCAL_FONT = "DejaVu Sans Mono"


def offline_svg(svg: str) -> str:
    """Drop the @font-face rules (they name web URLs) and use a local monospace font."""
    svg = re.sub(r"@font-face\s*\{[^}]*\}", "", svg)
    return svg.replace("Fira Code, monospace", f"{LOCAL_FONT}, monospace").replace(
        "font-family: arial", f"font-family: {LOCAL_FONT}")


def svg_to_png(svg_path: Path, png_path: Path) -> None:
    import cairosvg

    cairosvg.svg2png(bytestring=offline_svg(svg_path.read_text(encoding="utf-8")).encode("utf-8"),
                     write_to=str(png_path), output_width=1600)


if __name__ == "__main__":
    svg_to_png(Path(sys.argv[1]), Path(sys.argv[2]))
