//! The core's metrics for Python: the process-wide snapshot as plain tuples (`polylock.metrics`
//! builds prometheus_client's and OpenTelemetry's objects from them) and the Prometheus text.

use polylock::metrics::{Family, SampleValue};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// `[(name, help, type, [(labels, value)])]`: type `"counter"`, `"gauge"` or `"histogram"`,
/// labels `[(name, value)]`, value a float or `([(upper_bound, cumulative_count)], count, sum)`.
pub(crate) fn families<'py>(py: Python<'py>, families: &[Family]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for f in families {
        let kind = f.kind.name();
        let samples = PyList::empty(py);
        for s in &f.samples {
            let labels: Vec<(&str, &str)> =
                s.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let value = match &s.value {
                SampleValue::Number(v) => v.into_pyobject(py)?.into_any(),
                SampleValue::Histogram(h) => (h.buckets.clone(), h.count, h.sum)
                    .into_pyobject(py)?
                    .into_any(),
            };
            samples.append(PyTuple::new(
                py,
                [labels.into_pyobject(py)?.into_any(), value],
            )?)?;
        }
        out.append((f.name, f.help, kind, samples))?;
    }
    Ok(out)
}

/// Every client of this process added up (closed clients' counts included).
#[pyfunction]
#[pyo3(signature = (include_zero = false))]
pub(crate) fn metrics_snapshot(py: Python<'_>, include_zero: bool) -> PyResult<Bound<'_, PyList>> {
    let snapshot = py.detach(move || polylock::metrics::snapshot(include_zero));
    families(py, &snapshot)
}

/// Every family the core records, `(name, type, help)` in its order (prometheus_client learns
/// the names from `describe()` before any lock is used).
#[pyfunction]
pub(crate) fn metric_families() -> Vec<(&'static str, &'static str, &'static str)> {
    polylock::metrics::families()
        .into_iter()
        .map(|(name, help, kind)| (name, kind.name(), help))
        .collect()
}

/// Every client of this process in the Prometheus text format.
#[pyfunction]
pub(crate) fn metrics_text(py: Python<'_>) -> String {
    py.detach(polylock::metrics::prometheus_text)
}
