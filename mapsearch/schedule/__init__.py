"""The schedule: data model, figures, legality rules and the JSON file format."""

from mapsearch.schedule.figures import Figures, LinkFigures, TensorTraffic, differences
from mapsearch.schedule.json_io import load_schedule, save_schedule, schedule_from_dict, schedule_to_dict
from mapsearch.schedule.schedule import LevelMapping, Schedule

__all__ = [
    "Figures",
    "LevelMapping",
    "LinkFigures",
    "Schedule",
    "TensorTraffic",
    "differences",
    "load_schedule",
    "save_schedule",
    "schedule_from_dict",
    "schedule_to_dict",
]
