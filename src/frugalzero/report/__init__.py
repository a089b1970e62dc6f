"""``frugalzero report``: a run (or several, overlaid) as one self-contained HTML file.

Everything a run leaves behind is read back (``runs``), drawn as inline SVG (``charts``), its
match games turned into positions a small board viewer steps through (``games``), and put in
one page with no network access at view time (``page``). ``frugalzero run`` rewrites
``report.html`` in its run directory after every iteration.
"""

from frugalzero.report.page import build_report, write_report

__all__ = ["build_report", "write_report"]
