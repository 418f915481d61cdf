"""What the Estimators share, with no ML framework imported: step arithmetic, data inputs, the
worker group, callbacks protocol, checkpoint names and progress."""
