"""The served app and the screenshots as a real browser draws them: headless Chromium.

Runs where Debian's chromium is installed (`apt-get install chromium`), skips elsewhere. The
served page must leave its splash for the app's first screen, and every glyph the app writes
there, or that a screenshot holds, must be drawn by the browser's fonts — never the empty box a
font shows for a character it lacks (the ⏸ and ⏵ of an earlier version were such boxes).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.browser import CHROMIUM, RECORD_TERMINAL_JS, chromium, drawn_characters
from tests.tui.terminal import PROJECT
from tests.tui.test_serve_and_e2e import SERVE_TOKEN, served

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"
    ),
    pytest.mark.timeout(600),
]

SCREENSHOTS = sorted((PROJECT / "screenshots").glob("*.svg"))
TERMINAL_FONT = "15px 'Roboto Mono', Monaco, 'Courier New', monospace"
"""The font textual-serve's page gives its terminal (textual_serve/static/js/textual.js)."""
NO_FONT_HAS_IT = "\U0010fffc"


async def test_every_screenshot_renders_to_png_with_every_glyph_drawn(tmp_path: Path) -> None:
    assert SCREENSHOTS, "screenshots/*.svg are committed"
    async with chromium(tmp_path / "profile") as page:
        for svg in SCREENSHOTS:
            await page.open(svg.as_uri())
            text = await page.evaluate(
                "Array.from(document.querySelectorAll('text')).map(t => t.textContent).join('')"
            )
            font = await page.evaluate(
                "(s => `${s.fontSize} ${s.fontFamily}`)"
                "(getComputedStyle(document.querySelector('[class*=matrix] text')))"
            )
            assert await page.glyphs_not_drawn([NO_FONT_HAS_IT, "A"], font) == [NO_FONT_HAS_IT]
            chars = drawn_characters(text)
            assert await page.glyphs_not_drawn(chars, font) == [], f"{svg.name} in {font}"
            png = tmp_path / f"{svg.stem}.png"
            await page.screenshot(png)
            assert png.stat().st_size > 10_000, f"{svg.name} rendered to an empty picture"


async def test_the_served_page_shows_the_first_screen_with_every_glyph_drawn(
    tmp_path: Path,
) -> None:
    with served(tmp_path) as port:
        async with chromium(tmp_path / "profile") as page:
            await page.send("Page.addScriptToEvaluateOnNewDocument", source=RECORD_TERMINAL_JS)
            await page.open(f"http://127.0.0.1:{port}/?token={SERVE_TOKEN}")
            await page.until(
                "document.body.classList.contains('-first-byte')"
                " && window.__terminalText.includes('Recent runs')",
                "the splash giving way to the app's first screen",
            )
            text = await page.evaluate("window.__terminalText")
            chars = drawn_characters(text)
            assert len(chars) >= 3, "the first screen draws glyphs beyond ASCII (borders, marks)"
            assert await page.glyphs_not_drawn([NO_FONT_HAS_IT], TERMINAL_FONT) == [NO_FONT_HAS_IT]
            assert await page.glyphs_not_drawn(chars, TERMINAL_FONT) == []
            await page.screenshot(tmp_path / "served.png")
            assert (tmp_path / "served.png").stat().st_size > 10_000
