//! The papers' environments, so that their experiments can be replayed from Python: the
//! synthetic RKHS bandit of Flynn & Reeb (2024) §7, the contextual problems of Zenati et al.
//! (2022) §5 and the abruptly changing rewards of Iwazaki & Takeno (2025) §6.

use kernel_bandits::env::{
    BanditRound, ContextualConfig, ContextualEnv, ContextualProblem as RsContextual,
    DriftingProblem as RsDrifting, Environment, RegretTrace as RsTrace, SyntheticConfig,
    SyntheticProblem as RsSynthetic,
};
use kernel_bandits::points::Points;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::IntoPyDict;

use crate::agents::with_agent;
use crate::arrays::{elements, matrix, rows, to_numpy, vector};
use crate::errors::{InvalidParameterError, OrRaise};
use crate::kernels::{AnyKernel, Kernel};

/// Points as an (n, d) float64 array.
fn points_to_numpy<'py>(
    py: Python<'py>,
    points: &Points<'_>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let mut flat = Vec::with_capacity(points.len() * points.dim());
    points.for_each(|_, x| flat.extend_from_slice(x));
    PyArray1::from_vec(py, flat).reshape([points.len(), points.dim()])
}

/// Clears a numpy array's WRITEABLE flag.
fn read_only(array: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = array.py();
    array.call_method("setflags", (), Some(&[("write", false)].into_py_dict(py)?))?;
    Ok(())
}

/// Plays `agent` on `env` for `horizon` rounds, in Rust with the GIL released.
fn run<E: Environment + Sync>(
    py: Python<'_>,
    env: &E,
    agent: &Bound<'_, PyAny>,
    horizon: usize,
) -> PyResult<PyRegretTrace> {
    let trace = with_agent(agent, |a| py.detach(|| env.run(a, horizon)).or_raise())?;
    PyRegretTrace::new(py, trace)
}

/// What an agent did over a run: the arm chosen, the noisy reward and the instantaneous regret
/// max f − f(x_t) of every round.
#[pyclass(name = "RegretTrace", frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct PyRegretTrace {
    /// Index of the arm played in each round (int64).
    #[pyo3(get)]
    chosen: Py<PyArray1<i64>>,
    /// The noisy reward of each round.
    #[pyo3(get)]
    rewards: Py<PyArray1<f64>>,
    /// The instantaneous regret of each round.
    #[pyo3(get)]
    regret: Py<PyArray1<f64>>,
}

impl PyRegretTrace {
    fn new(py: Python<'_>, trace: RsTrace) -> PyResult<Self> {
        let chosen: Vec<i64> = trace.chosen.iter().map(|&i| i as i64).collect();
        let chosen = PyArray1::from_vec(py, chosen);
        let (rewards, regret) = (to_numpy(py, trace.rewards), to_numpy(py, trace.regret));
        // Read-only: the run's record, from which `total` and `cumulative` are derived.
        for array in [chosen.as_any(), rewards.as_any(), regret.as_any()] {
            read_only(array)?;
        }
        Ok(Self {
            chosen: chosen.unbind(),
            rewards: rewards.unbind(),
            regret: regret.unbind(),
        })
    }
}

impl PyRegretTrace {
    /// The crate's trace of the regret array, for its total and cumulative sums.
    fn trace(&self, py: Python<'_>) -> PyResult<RsTrace> {
        Ok(RsTrace {
            regret: self.regret.bind(py).try_readonly()?.as_slice()?.to_vec(),
            ..RsTrace::default()
        })
    }
}

#[pymethods]
impl PyRegretTrace {
    /// The cumulative regret after each round.
    fn cumulative<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(to_numpy(py, self.trace(py)?.cumulative()))
    }
    /// The total regret.
    #[getter]
    fn total(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(self.trace(py)?.total())
    }
    fn __len__(&self, py: Python<'_>) -> usize {
        self.regret.bind(py).len()
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "RegretTrace(rounds={}, total={:?})",
            self.__len__(py),
            self.total(py)?
        ))
    }
}

/// One round of a problem: the arms offered (an (n, d) array), their true values (which an agent
/// never sees), the noise added to whichever arm is played, and the best value.
#[pyclass(name = "Round", frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct PyRound {
    /// The arms offered, one per row.
    #[pyo3(get)]
    arms: Py<PyArray2<f64>>,
    /// f at each arm.
    #[pyo3(get)]
    values: Py<PyArray1<f64>>,
    /// The noise ε of this round: the reward of arm i is values[i] + noise.
    #[pyo3(get)]
    noise: f64,
    /// max(values).
    #[pyo3(get)]
    best_value: f64,
    /// Contextual problems: the context of this round (else `None`).
    #[pyo3(get)]
    context: Option<Py<PyArray1<f64>>>,
    /// Contextual problems: the actions (arms are [context ‖ action]; else `None`).
    #[pyo3(get)]
    actions: Option<Py<PyArray2<f64>>>,
}

impl PyRound {
    fn new(py: Python<'_>, round: &impl BanditRound) -> PyResult<Self> {
        let values = round.values().to_vec();
        let best_value = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let arms = points_to_numpy(py, &round.arms())?;
        let values = to_numpy(py, values);
        // Read-only, so that `reward` and `best_value` keep agreeing with them.
        for array in [arms.as_any(), values.as_any()] {
            read_only(array)?;
        }
        Ok(Self {
            arms: arms.unbind(),
            values: values.unbind(),
            noise: round.noise(),
            best_value,
            context: None,
            actions: None,
        })
    }
}

#[pymethods]
impl PyRound {
    /// The noisy reward of arm `i`.
    fn reward(&self, py: Python<'_>, i: usize) -> PyResult<f64> {
        let values = self.values.bind(py).try_readonly()?;
        let v = values.as_slice()?;
        v.get(i).map(|v| v + self.noise).ok_or_else(|| {
            crate::errors::ArmSetError::new_err(format!("arm {i} out of range: {} arms", v.len()))
        })
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Round(arms={}, best_value={:?})",
            self.values.bind(py).len(),
            self.best_value
        )
    }
}

/// The kernel bandit of Flynn & Reeb (2024) §7: f(x) = b Σᵢ wᵢ k(x, zᵢ) with `centres` centres
/// zᵢ ~ U([0, 1]^d), w ~ N(0, I) and b chosen so that ‖f‖_H = `norm_bound` exactly; each round
/// offers `arms` fresh arms ~ U([0, 1]^d), and a reward is f(x) + ε with ε ~ N(0, `noise_sd`²).
/// Everything is a function of `seed` and the round number, so several agents can replay the
/// same rounds.
#[pyclass(name = "SyntheticProblem", frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct PySynthetic {
    inner: RsSynthetic<AnyKernel>,
}

#[pymethods]
impl PySynthetic {
    #[new]
    #[pyo3(signature = (kernel, *, dims = 3, centres = 20, arms = 100, norm_bound = 10.0, noise_sd = 0.1, seed = 0))]
    fn new(
        kernel: PyRef<'_, Kernel>,
        dims: usize,
        centres: usize,
        arms: usize,
        norm_bound: f64,
        noise_sd: f64,
        seed: u64,
    ) -> PyResult<Self> {
        let config = SyntheticConfig {
            dim: dims,
            centres,
            arms,
            norm_bound,
            noise_sd,
        };
        let inner = RsSynthetic::new(kernel.inner.clone(), config, seed).or_raise()?;
        Ok(Self { inner })
    }

    /// Round `t` (0-based); the same for every call.
    fn round(&self, py: Python<'_>, t: usize) -> PyResult<PyRound> {
        PyRound::new(py, &self.inner.round(t))
    }

    /// f at the point `x` (1-D) or at each row of `x` (2-D).
    fn value(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let single = x.getattr("ndim").map_or_else(
            |_| {
                py.import("numpy")?
                    .call_method1("ndim", (x,))?
                    .extract::<usize>()
            },
            |n| n.extract::<usize>(),
        )? == 1;
        let (held, one);
        let (data, dim) = if single {
            one = vector(x, "x")?;
            let v = elements(&one);
            (v, v.len())
        } else {
            held = matrix(x, "x")?;
            rows(&held)
        };
        let inner = &self.inner;
        let values = py
            .detach(|| {
                let points = Points::from_row_major(data, dim)?;
                let mut values = Vec::with_capacity(points.len());
                let mut scratch = vec![0.0; dim];
                for i in 0..points.len() {
                    values.push(inner.value(points.point(i, &mut scratch))?);
                }
                Ok::<_, kernel_bandits::Error>(values)
            })
            .or_raise()?;
        if single {
            Ok(values[0].into_pyobject(py)?.into_any().unbind())
        } else {
            Ok(to_numpy(py, values).into_any().unbind())
        }
    }

    /// ‖f‖_H, equal to `norm_bound` up to rounding.
    #[getter]
    fn rkhs_norm(&self) -> f64 {
        self.inner.rkhs_norm()
    }

    /// Plays `agent` for `horizon` rounds (in Rust, with the GIL released) and returns its
    /// choices, rewards and regret.
    fn run(
        &self,
        py: Python<'_>,
        agent: &Bound<'_, PyAny>,
        horizon: usize,
    ) -> PyResult<PyRegretTrace> {
        run(py, &self.inner, agent, horizon)
    }

    fn __repr__(&self) -> String {
        let c = self.inner.config();
        format!(
            "SyntheticProblem(dims={}, centres={}, arms={}, norm_bound={:?}, noise_sd={:?})",
            c.dim, c.centres, c.arms, c.norm_bound, c.noise_sd
        )
    }
}

/// The contextual bandits of Zenati et al. (2022) §5: `env` is "bump" (contexts in [0, 1]^5),
/// "chessboard" or "step_diagonal" (contexts in [0, 1]^2); each round draws a context, the
/// actions are `anchors` points of [0, 1) drawn once, and the agent chooses among the joint
/// points [context ‖ action] (`Round.arms`).
#[pyclass(name = "ContextualProblem", frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct PyContextual {
    inner: RsContextual,
}

#[pymethods]
impl PyContextual {
    #[new]
    #[pyo3(signature = (env, *, anchors = 10, noise_sd = 0.1, seed = 0))]
    fn new(env: &str, anchors: usize, noise_sd: f64, seed: u64) -> PyResult<Self> {
        let env: ContextualEnv = env
            .parse()
            .map_err(|e| InvalidParameterError::new_err(format!("{e}")))?;
        let config = ContextualConfig { anchors, noise_sd };
        Ok(Self {
            inner: RsContextual::new(env, config, seed).or_raise()?,
        })
    }

    /// Round `t` (0-based): `context`, `actions`, the joint `arms`, their `values` and `noise`.
    fn round(&self, py: Python<'_>, t: usize) -> PyResult<PyRound> {
        let round = self.inner.round(t);
        let mut r = PyRound::new(py, &round)?;
        r.context = Some(to_numpy(py, round.context.clone()).unbind());
        r.actions = Some(points_to_numpy(py, &round.actions())?.unbind());
        Ok(r)
    }

    /// The reward function r(context, action).
    fn value(&self, context: &Bound<'_, PyAny>, action: &Bound<'_, PyAny>) -> PyResult<f64> {
        let (c, a) = (vector(context, "context")?, vector(action, "action")?);
        self.inner.value(elements(&c), elements(&a)).or_raise()
    }

    /// Coordinates of a context.
    #[getter]
    fn context_dim(&self) -> usize {
        self.inner.env().context_dim()
    }

    /// Coordinates of an action.
    #[getter]
    fn action_dim(&self) -> usize {
        self.inner.env().action_dim()
    }

    /// Plays `agent` for `horizon` rounds (in Rust, with the GIL released).
    fn run(
        &self,
        py: Python<'_>,
        agent: &Bound<'_, PyAny>,
        horizon: usize,
    ) -> PyResult<PyRegretTrace> {
        run(py, &self.inner, agent, horizon)
    }

    fn __repr__(&self) -> String {
        let c = self.inner.config();
        format!(
            "ContextualProblem({:?}, anchors={}, noise_sd={:?})",
            self.inner.env().name(),
            c.anchors,
            c.noise_sd
        )
    }
}

/// A fixed arm set whose mean rewards change over time (Iwazaki & Takeno 2025 §6). Build the
/// paper's experiment with `DriftingProblem.paper004(kernel, horizon)`: 900 arms on a 30 × 30
/// grid of [0, 1]², rewards from three random functions in the kernel's RKHS that switch at
/// rounds T/5 and 2T/5.
#[pyclass(name = "DriftingProblem", frozen, module = "kernel_bandits")]
#[derive(Debug)]
pub struct PyDrifting {
    inner: RsDrifting,
}

#[pymethods]
impl PyDrifting {
    /// Iwazaki & Takeno (2025) §6's abruptly changing problem for `kernel` (on 2-D points).
    #[staticmethod]
    #[pyo3(signature = (kernel, horizon, *, noise_sd = 0.1, seed = 0))]
    fn paper004(
        kernel: PyRef<'_, Kernel>,
        horizon: usize,
        noise_sd: f64,
        seed: u64,
    ) -> PyResult<Self> {
        Ok(Self {
            inner: RsDrifting::paper004(&kernel.inner, horizon, noise_sd, seed).or_raise()?,
        })
    }

    /// The arms, one per row.
    #[getter]
    fn arms<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let arms = self.inner.arms();
        points_to_numpy(py, &Points::from_rows(&arms).or_raise()?)
    }

    /// The mean reward of every arm at round `t`.
    fn values<'py>(&self, py: Python<'py>, t: usize) -> Bound<'py, PyArray1<f64>> {
        to_numpy(py, self.inner.values(t))
    }

    /// Round `t` (0-based).
    fn round(&self, py: Python<'_>, t: usize) -> PyResult<PyRound> {
        PyRound::new(py, &self.inner.round(t))
    }

    /// The total variation V_T = Σ_t max_x |f_t(x) − f_{t+1}(x)| over `horizon` rounds.
    fn variation(&self, horizon: usize) -> f64 {
        self.inner.variation(horizon)
    }

    /// ‖f‖_H of each reward function, when known.
    #[getter]
    fn rkhs_norms(&self) -> Option<Vec<f64>> {
        self.inner.rkhs_norms().map(<[f64]>::to_vec)
    }

    /// Plays `agent` for `horizon` rounds (in Rust, with the GIL released).
    fn run(
        &self,
        py: Python<'_>,
        agent: &Bound<'_, PyAny>,
        horizon: usize,
    ) -> PyResult<PyRegretTrace> {
        run(py, &self.inner, agent, horizon)
    }
}

/// Adds the environment classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRegretTrace>()?;
    m.add_class::<PyRound>()?;
    m.add_class::<PySynthetic>()?;
    m.add_class::<PyContextual>()?;
    m.add_class::<PyDrifting>()?;
    Ok(())
}
