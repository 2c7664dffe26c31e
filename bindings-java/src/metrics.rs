//! The process's metrics for Java: core's snapshot (every client added up) as one string that
//! `MetricFamily.parse` reads, and the Prometheus text of the process or of one client.
//!
//! One string per snapshot keeps it to one JNI call, however many series there are (the
//! Micrometer binder reads a snapshot at most once a second, not per meter). Its lines:
//!
//! ```text
//! F <name> <type> <help>                          a family: counter, gauge or histogram
//! N <value> [<label> <value>]...                  a series of the family above: a number
//! H <count> <sum> <n> [<le> <count>]{n} [<label> <value>]...   a histogram's series
//! ```
//!
//! Fields are separated by tabs; a backslash, a tab or a newline inside a field (a lock name in
//! a `name` label may hold any of them) is written `\\`, `\t` or `\n`. Numbers are Rust's
//! shortest round-trip form, which `Double.parseDouble` reads.

use std::fmt::Write as _;

use jni::objects::JClass;
use jni::sys::{jboolean, jlong, jstring, JNI_FALSE};
use jni::JNIEnv;
use polylock::metrics::{snapshot, Family, SampleValue};

use crate::client::client;
use crate::convert::java_string;
use crate::error::entry;

fn field(out: &mut String, s: &str) {
    out.push('\t');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn number(out: &mut String, v: f64) {
    let _ = write!(out, "\t{v}");
}

/// The families in the form above.
pub(crate) fn encode(families: &[Family]) -> String {
    let mut out = String::with_capacity(256 * families.len());
    for f in families {
        out.push('F');
        field(&mut out, f.name);
        field(&mut out, f.kind.name());
        field(&mut out, f.help);
        out.push('\n');
        for s in &f.samples {
            match &s.value {
                SampleValue::Number(v) => {
                    out.push('N');
                    number(&mut out, *v);
                }
                SampleValue::Histogram(h) => {
                    out.push('H');
                    let _ = write!(out, "\t{}", h.count);
                    number(&mut out, h.sum);
                    let _ = write!(out, "\t{}", h.buckets.len());
                    for (le, c) in &h.buckets {
                        number(&mut out, *le);
                        let _ = write!(out, "\t{c}");
                    }
                }
            }
            for (k, v) in &s.labels {
                field(&mut out, k);
                field(&mut out, v);
            }
            out.push('\n');
        }
    }
    out
}

/// Every client of the process added up (closed clients included), encoded as above;
/// `include_zero` lists every kind and outcome of each backend in use even at zero.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_metricsSnapshot<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    include_zero: jboolean,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let text = encode(&snapshot(include_zero != JNI_FALSE));
        java_string(env, &text)
    })
}

/// Every client of the process in the Prometheus text format.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_metricsText<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        java_string(env, &polylock::metrics::prometheus_text())
    })
}

/// One client's metrics in the Prometheus text format.
#[no_mangle]
pub extern "system" fn Java_io_polylock_Native_clientMetricsText<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handle: jlong,
) -> jstring {
    entry(&mut env, std::ptr::null_mut(), |env| {
        let text = client(handle)?.metrics_text();
        java_string(env, &text)
    })
}
