"""Reports of a schedule's figures: a readable text table and a JSON summary."""

from mapsearch.report.json_report import report_dict, report_json
from mapsearch.report.text import format_exact, render_text

__all__ = ["format_exact", "render_text", "report_dict", "report_json"]
