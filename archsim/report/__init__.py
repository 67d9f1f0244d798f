"""Results and report writers (report.json, layers.csv, summary.md, plots, trace, SCALE-Sim CSV)."""
from archsim.report.result import LayerResult, SimResult

__all__ = ["LayerResult", "SimResult", "write_reports"]


def __getattr__(name):
    if name == "write_reports":
        from archsim.report.writers import write_reports

        return write_reports
    raise AttributeError(name)
