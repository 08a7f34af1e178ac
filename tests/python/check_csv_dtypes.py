"""Checks every CSV of an output folder against the column types its docs/ page lists.

Usage: check_csv_dtypes.py DOC.md FOLDER. Reads the ```dtypes block of DOC.md (one line per
file: `name.csv: column:type, ...`), then every *.csv in FOLDER with pandas when it is
installed (else Python's csv module, which applies the same rules by hand): every CSV must be
documented, its header must equal the documented columns, and each column must parse as its
type. Prints one line per file with the engine used; exits 1 listing every mismatch.
"""
import csv
import math
import os
import re
import sys

# bigint: an exact integer that may outgrow 64 bits (int64 in pandas, else text of digits).
TYPES = {"int", "bigint", "float", "flag", "bool", "str"}
# The documented column that stands for a sweep's swept parameters: one float column per --set
# name, named at run time (common/run_columns.hpp kSweptParameters).
SWEPT = "{swept}"
# What reads as a missing value: an empty field, and "nan" where a file documents it (table1.csv).
MISSING = ("", "nan")


def documented_types(doc_path):
    """{file: [(column, type, may_be_empty)]} from the ```dtypes block of a docs page."""
    text = open(doc_path, encoding="utf-8").read()
    block = re.search(r"```dtypes\n(.*?)```", text, re.S)
    if not block:
        raise SystemExit(f"{doc_path}: no ```dtypes block")
    files = {}
    for line in block.group(1).strip().splitlines():
        name, columns = line.split(":", 1)
        spec = []
        for item in columns.split(","):
            column, kind = item.strip().rsplit(":", 1)
            optional = kind.endswith("?")
            kind = kind.rstrip("?")
            if kind not in TYPES:
                raise SystemExit(f"{doc_path}: {name} column {column}: unknown type {kind}")
            spec.append((column, kind, optional))
        files[name.strip()] = spec
    return files


def spec_for_header(documented, header):
    """The documented columns with the swept-parameter entry replaced by the header's columns in
    its place (typed float), or None when the header does not fit around it."""
    names = [column for column, _, _ in documented]
    if SWEPT not in names:
        return documented
    at = names.index(SWEPT)
    tail = len(names) - at - 1
    swept = header[at:len(header) - tail]
    if len(header) < len(names) - 1 or header[:at] != names[:at] or \
            header[len(header) - tail:] != names[at + 1:]:
        return None
    return documented[:at] + [(name, "float", False) for name in swept] + documented[at + 1:]


def check_value_text(text, kind, optional):
    """The plain rule for one field, as the csv-module fallback applies it."""
    if text in MISSING:
        return optional
    if kind == "str":
        return True
    if kind == "bool":
        return text in ("true", "false")
    try:
        number = float(text)
    except ValueError:
        return False
    if kind == "float":
        return True
    if not math.isfinite(number) or number != int(number) or not re.fullmatch(r"-?\d+", text):
        return False
    return kind in ("int", "bigint") or number in (0, 1)


def check_with_csv_module(path, spec):
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    problems = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(spec):
            problems.append(f"line {line}: {len(row)} fields, expected {len(spec)}")
            continue
        for text, (column, kind, optional) in zip(row, spec):
            if not check_value_text(text, kind, optional):
                problems.append(f"line {line} column {column}: {text!r} is not {kind}")
    return problems


def check_with_pandas(pandas, path, spec):
    # keep_default_na=False with na_values=MISSING: only those are missing, so a regime or
    # variant name such as "NA" stays text.
    frame = pandas.read_csv(path, keep_default_na=False, na_values=list(MISSING))
    problems = []
    if frame.empty:  # a header without rows (its names checked above) has no types to show
        return problems
    for column, kind, optional in spec:
        series = frame[column]
        dtype = str(series.dtype)
        missing = bool(series.isna().any())
        if missing and not optional:
            problems.append(f"column {column}: empty fields in a column documented as never empty")
        if kind == "bigint":
            digits = series.dropna().astype(str).str.fullmatch(r"-?\d+").all()
            if not (dtype.startswith("int") or (dtype == "object" and digits)):
                problems.append(f"column {column}: dtype {dtype}, expected integers")
            continue
        if kind == "bool":
            if dtype != "bool":
                problems.append(f"column {column}: dtype {dtype}, expected true/false (bool)")
            continue
        if kind == "str":
            if dtype != "object" and not (missing and series.isna().all()):
                problems.append(f"column {column}: dtype {dtype}, expected text (object)")
            continue
        numeric = dtype.startswith("int") or dtype.startswith("float")
        if not numeric:
            problems.append(f"column {column}: dtype {dtype}, expected {kind} (mixed types)")
            continue
        if kind in ("int", "flag") and dtype.startswith("float"):
            values = series.dropna()
            if not missing or not (values == values.round()).all():
                problems.append(f"column {column}: dtype {dtype}, expected integers")
        if kind == "flag" and not series.dropna().isin([0, 1]).all():
            problems.append(f"column {column}: values other than 0 and 1")
    return problems


def main(doc_path, folder):
    try:
        import pandas
    except ImportError:
        pandas = None
    engine = f"pandas {pandas.__version__}" if pandas else "csv module (pandas not installed)"
    spec = documented_types(doc_path)
    failures = []
    names = sorted(n for n in os.listdir(folder) if n.endswith(".csv"))
    if not names:
        failures.append(f"{folder}: no CSV files")
    for name in names:
        path = os.path.join(folder, name)
        if name not in spec:
            failures.append(f"{path}: not described in {doc_path}")
            continue
        with open(path, newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle))
        columns = spec_for_header(spec[name], header)
        if columns is None or header != [column for column, _, _ in columns]:
            expected = [column for column, _, _ in spec[name]]
            failures.append(f"{path}: header {header} differs from the documented {expected}")
            continue
        if pandas:
            problems = check_with_pandas(pandas, path, columns)
        else:
            problems = check_with_csv_module(path, columns)
        failures.extend(f"{path}: {p}" for p in problems[:5])
        rows = "" if os.path.getsize(path) > len(",".join(header)) + 1 else " (no rows)"
        print(f"{name}: {len(columns)} columns checked with {engine}{rows}: "
              f"{'ok' if not problems else str(len(problems)) + ' problems'}")
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: check_csv_dtypes.py DOC.md FOLDER")
    sys.exit(main(sys.argv[1], sys.argv[2]))
