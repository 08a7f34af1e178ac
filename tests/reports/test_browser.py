#!/usr/bin/env python3
# Screenshots of the HTML reports in a real headless browser: each page in PAGES is
# built by attngeo, opened by Chromium, and its PNG must show a rendered page (many colours),
# not a blank or an error page. Extend by adding a Page to pages(); exits 77 (skip) without
# Chromium.
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

SKIP = 77  # CTest's SKIP_RETURN_CODE for this test
WINDOW = "1280,4000"
BROWSER_SECONDS = 120  # per screenshot; a hung browser fails the test instead of CI
# A page of text on white has a few dozen colours (anti-aliasing); figures add hundreds.
MIN_COLOURS = 64


@dataclass
class Page:
    name: str
    commands: list  # attngeo argument lists run in order (in the scratch folder)
    html: str  # the page to open, relative to the scratch folder


def pages(attngeo):
    """The report pages to screenshot; other reports add theirs here."""
    sweep = ["sweep", "--set", "beta=0.01,0.05,0.1", "--set", "d=64,128,256", "--trials",
             "40", "--N", "pow2", "--out", "sweep"]
    return [
        Page("demo", [["simulate", "--out", "demo"], ["report", "--in", "demo", "--out", "demo"]],
             "demo/index.html"),
        Page("sweep", [sweep, ["report", "--in", "sweep", "--out", "sweep"]], "sweep/index.html"),
        Page("models_sim", models_sim(), "models_sim/index.html"),
        Page("calibration", calibration(), "calibration/index.html"),
        Page("compare_set", compare_set(), "compare_set/index.html"),
    ] + models_stories(attngeo)


def calibration():
    """A simulate report with the calibration of its verdict (simulate --calibrate)."""
    return [["simulate", "--L", "63", "--T1", "8", "--T2", "48", "--N", "pow2", "--trials", "100",
             "--calibrate", "20", "--out", "calibrated"],
            ["report", "--in", "calibrated", "--out", "calibration"]]


def compare_set():
    """compare with two --emp (kind compare-set): the universal kappa, then each model's
    compare report; planted heads stand in for two models, so it runs without libtorch."""
    planted = ["--heads", "3", "--docs", "30", "--L", "32", "--T1", "4", "--T2", "24", "--d", "16"]
    return [["simulate", "--as-extract", "planted_a", *planted],
            ["simulate", "--as-extract", "planted_b", *planted, "--seed", "2"],
            ["compare", "--emp", "planted_a", "--emp", "planted_b", "--replicates", "50",
             "--quiet", "--out", "set"],
            ["report", "--in", "set", "--out", "compare_set"]]


def models_sim():
    """Two simulations overlaid (models_sim_P, models_sim_R): runs without libtorch."""
    small = ["--L", "63", "--T1", "8", "--T2", "48", "--N", "pow2", "--trials", "40"]
    return [["simulate", *small, "--beta", "0.05", "--out", "sim_a"],
            ["simulate", *small, "--beta", "0.2", "--out", "sim_b"],
            ["report", "--in", "sim_a", "sim_b", "--out", "models_sim"]]


def models_stories(attngeo):
    """Three models in one report: stories260K extracted at three contexts and compared stand in
    for three models (models_fig5_P/R, models_fig6, models_fig8). Needs ../shared's checkpoint
    (ATTNGEO_SHARED) and an attngeo built with extract (libtorch)."""
    repository = Path(__file__).resolve().parents[2]
    shared = Path(os.environ.get("ATTNGEO_SHARED", repository.parent / "shared"))
    model = shared / "models" / "stories260K" / "stories260K.bin"
    # A build without libtorch has no extract: its "extract --help" prints the main help.
    extract_help = subprocess.run([attngeo, "extract", "--help"], capture_output=True, text=True)
    has_extract = extract_help.returncode == 0 and "--model" in extract_help.stdout
    if not model.exists() or not has_extract:
        print(f"models_stories: not drawn ({model} or attngeo extract missing)")
        return []
    corpus = repository / "examples" / "stories260K_corpus.txt"
    commands = []
    for context in (32, 64, 96):
        commands += [["extract", "--model", str(model), "--corpus", str(corpus), "--context",
                      str(context), "--docs", "12", "--quiet", "--out", f"s260k_c{context}"],
                     ["compare", "--emp", f"s260k_c{context}", "--replicates", "200", "--quiet",
                      "--out", f"s260k_c{context}-compare"]]
    commands.append(["report", "--in", "s260k_c32-compare", "s260k_c64-compare",
                     "s260k_c96-compare", "--out", "models_stories"])
    return [Page("models_stories", commands, "models_stories/index.html")]


def find_chromium():
    forced = os.environ.get("ATTNGEO_CHROMIUM")
    if forced is not None:
        return forced if os.access(forced, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def png_pixels(path):
    """Width, height and the RGB(A) rows of an 8-bit, non-interlaced PNG (what Chromium writes),
    decoded here so the test needs no imaging package."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour {colour})")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        unfilter(kind, line, previous, channels)
        rows.append(line)
        previous = line
    return width, height, channels, rows


def unfilter(kind, line, previous, bpp):
    # PNG specification, section 9 (filter types 0-4).
    if kind == 0:
        return
    if kind == 2:
        for i in range(len(line)):
            line[i] = (line[i] + previous[i]) & 0xFF
        return
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
            line[i] = (line[i] + pred) & 0xFF
        else:
            raise ValueError(f"unknown PNG filter {kind}")


def distinct_colours(path):
    width, height, channels, rows = png_pixels(path)
    colours = set()
    for line in rows:
        colours.update(bytes(line[i:i + 3]) for i in range(0, len(line), channels))
    return width, height, len(colours)


def screenshot(chromium, html, png):
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--screenshot={png}", f"--window-size={WINDOW}", html.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=BROWSER_SECONDS)


def check_page(attngeo, chromium, scratch, page):
    for args in page.commands:
        run = subprocess.run([attngeo, *args, "--quiet"] if args[0] in ("simulate", "sweep")
                             else [attngeo, *args], cwd=scratch, capture_output=True, text=True,
                             timeout=300)
        if run.returncode != 0:
            return f"{page.name}: attngeo {' '.join(args)} exited {run.returncode}: {run.stderr}"
    html = scratch / page.html
    png = scratch / f"{page.name}.png"
    started = time.monotonic()
    shot = screenshot(chromium, html, png)
    seconds = time.monotonic() - started
    if not png.exists():
        return f"{page.name}: no screenshot (chromium exit {shot.returncode}): {shot.stderr[-2000:]}"
    width, height, colours = distinct_colours(png)
    print(f"{page.name}: {width}x{height} screenshot in {seconds:.1f} s, {colours} colours "
          f"(at least {MIN_COLOURS} expected)")
    if colours < MIN_COLOURS:
        return f"{page.name}: screenshot {png} looks blank ({colours} colours)"
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: test_browser.py ATTNGEO_EXE SCRATCH_DIR")
    attngeo, scratch = sys.argv[1], Path(sys.argv[2])
    chromium = find_chromium()
    if chromium is None:
        print("SKIPPED: chromium not found (install Debian's chromium; scripts/install-deps.sh "
              "does unless ATTNGEO_WITH_CHROMIUM=0)")
        return SKIP
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    failures = [f for f in (check_page(attngeo, chromium, scratch, p) for p in pages(attngeo)) if f]
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
