"""What the command line prints: errors as one line (and a JSON object), progress, and tables that fit."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

err = Console(stderr=True)
out = Console()


def report_error(exc: Exception, *, json_output: bool, verbose: bool) -> int:
    """Say what went wrong and return the exit code: an expected error (a CitesumError) is one line, anything
    else is a bug and comes with its traceback."""
    from citesum.tasks.errors import CitesumError

    expected = isinstance(exc, CitesumError)
    kind, message = (exc.kind, str(exc)) if expected else ("internal", f"internal error: {type(exc).__name__}: {exc}")
    if verbose or not expected:
        sys.stderr.write("".join(traceback.format_exception(exc)))
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    if json_output:
        print(json.dumps({"error": {"kind": kind, "message": message}}, indent=2, ensure_ascii=False))
    return exc.exit_code if expected else 1


def print_upload(upload) -> None:
    """One log line per upload; never wrapped, so a service log keeps one line per event."""
    from citesum.tasks.ingest.names import path_text

    if upload.status == "duplicate":
        line = f"{upload.document_id}: same content as {path_text(upload.path)}, removed from the inbox"
    elif upload.status == "refused":
        line = f"{upload.document_id}: {upload.note}"
    else:
        line = f"{upload.document_id}: moved to {path_text(upload.path)}, announced ({upload.sha256[:12]})"
    err.print(line, highlight=False, soft_wrap=True, markup=False)


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


def print_ingest_table(rows: list[dict], totals: dict) -> None:
    shown = [{k: str(v) for k, v in row.items()} for row in rows]
    headers = list(shown[0]) if shown else ["document"]
    out.print(
        fitted_table("citesum ingest", headers, shown, out.width, cut="note", drop_first=("seconds", "pages lost"))
    )
    out.print(", ".join(f"{k} {v}" for k, v in totals.items()), highlight=False)


MIN_CUT_WIDTH = 12


def fitted_table(
    title: str,
    headers: list[str],
    rows: list[dict[str, str]],
    width: int,
    *,
    cut: str | None = None,
    drop_first: Sequence[str] = (),
) -> Table:
    """A table of whole values on one line each, within ``width``: the ``cut`` column (free text, e.g. a note)
    gets what width is left and is shortened with an ellipsis; when even that does not fit, the ``drop_first``
    columns are left out, in that order, then the others from the right (a 70-character file name at 80 columns:
    squeezed, they would show "…" for every value and header). The first column (document ids, which other commands
    take) is never shortened; only a terminal narrower than one id folds it. ``--json`` has every value whole."""
    natural = {h: max([len(h), *(len(r[h]) for r in rows)]) for h in headers}

    def needed(columns: list[str]) -> int:  # a column costs its text, a space either side and a rule
        return sum(MIN_CUT_WIDTH if c == cut else natural[c] for c in columns) + 3 * len(columns) + 1

    shown = list(headers)
    for column in [*drop_first, *reversed([h for h in headers[1:] if h not in drop_first])]:
        if needed(shown) <= width:
            break
        shown.remove(column)
    left_out = [h for h in headers if h not in shown]
    caption = f"{', '.join(left_out)}: left out to fit the terminal (--json has every column)" if left_out else None
    table = Table(title=title, caption=caption)
    for column in shown:
        if column == cut:
            spare = width - needed([c for c in shown if c != cut]) - 3
            table.add_column(column, width=min(natural[column], max(spare, MIN_CUT_WIDTH)), no_wrap=True)
        elif column == shown[0]:
            table.add_column(column, width=natural[column], overflow="fold")
        else:
            table.add_column(column, width=natural[column], no_wrap=True)
    for row in rows:
        table.add_row(*(Text(row[c]) for c in shown))
    return table
