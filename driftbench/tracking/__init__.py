"""Runs in TensorBoard and MLflow: what a tracker logs of a run record (values), the one path that feeds it (feed),
the two trackers (tensorboard_tracker, mlflow_tracker) and the export of runs already on disk (export).

The record stays the source of truth: a live run's recorder and ``driftbench export`` hand the trackers the
same values, made by the same functions from the record's rows, events and summary.
"""
