"""Reports of a schedule's figures (a readable text table and a JSON summary) and of a solve."""

from mapsearch.report.json_report import report_dict, report_json
from mapsearch.report.solve_report import render_solve_text, solve_report_dict
from mapsearch.report.text import format_exact, render_text

__all__ = ["format_exact", "render_solve_text", "render_text", "report_dict", "report_json", "solve_report_dict"]
