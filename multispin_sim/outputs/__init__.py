"""Outputs: streaming CSV records, the run summary with confidence intervals, run metadata."""
from .records import CsvStream, read_table
from .statistics import RunStatistics, ratio_confidence_interval
from .metadata import run_metadata, output_folder

__all__ = ["CsvStream", "read_table", "RunStatistics", "ratio_confidence_interval",
           "run_metadata", "output_folder"]
