//! The detectors' parameters, as a simulation scenario or the proxy's
//! configuration gives them (TOML), with the SIP overload thesis's values
//! as defaults.

use serde::{Deserialize, Serialize};

/// D1, delay-based detection (thesis §4.2.2, Figure 4.18).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct D1Config {
    /// m: seconds of fRpD samples the percentile covers.
    #[serde(default = "defaults::d1_window")]
    pub window: f64,
    /// w: seconds between evaluations.
    #[serde(default = "defaults::one")]
    pub interval: f64,
    /// t: the 95th percentile above which the next hop is congested.
    #[serde(default = "defaults::half")]
    pub threshold: f64,
    /// The percentile (0.95).
    #[serde(default = "defaults::percentile")]
    pub percentile: f64,
}

impl Default for D1Config {
    fn default() -> Self {
        D1Config { window: defaults::d1_window(), interval: 1.0, threshold: 0.5, percentile: defaults::percentile() }
    }
}

/// D2, pending-transaction-based detection: κ = ΔPT/Δλ and Wald's
/// sequential test of its standard deviation (thesis §4.2.3, eq. 4.13–4.15).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct D2Config {
    /// Seconds between κ observations.
    #[serde(default = "defaults::one")]
    pub interval: f64,
    /// μ of κ in the non-congested state (thesis: 0.056).
    #[serde(default = "defaults::d2_mu")]
    pub mu: f64,
    /// σκ,0 (thesis: 0.962).
    #[serde(default = "defaults::d2_sigma0")]
    pub sigma0: f64,
    /// σκ,1 (thesis: 20.392).
    #[serde(default = "defaults::d2_sigma1")]
    pub sigma1: f64,
    /// α: the largest probability of an error of the first kind, "congested"
    /// while σκ ≤ σκ,0 (thesis §4.2.3: 0.1).
    #[serde(default = "defaults::alpha")]
    pub alpha: f64,
    /// β: the largest probability of an error of the second kind, "not
    /// congested" while σκ ≥ σκ,1 (thesis §4.2.3: 0.05).
    #[serde(default = "defaults::beta")]
    pub beta: f64,
}

impl Default for D2Config {
    fn default() -> Self {
        D2Config {
            interval: 1.0,
            mu: defaults::d2_mu(),
            sigma0: defaults::d2_sigma0(),
            sigma1: defaults::d2_sigma1(),
            alpha: defaults::alpha(),
            beta: defaults::beta(),
        }
    }
}

/// D2's lab variant: Wald's sequential test of κ's mean with known σ
/// (thesis §5.2.3, Wald chapter 7), on the same κ observations.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct D2MeanConfig {
    /// μ0: κ's mean when not congested (lab: 0.589).
    #[serde(default = "defaults::d2m_mu0")]
    pub mu0: f64,
    /// μ1: κ's mean when congested (lab: 100.067).
    #[serde(default = "defaults::d2m_mu1")]
    pub mu1: f64,
    /// The known σ (lab, not congested: 6.780).
    #[serde(default = "defaults::d2m_sigma")]
    pub sigma: f64,
    /// α: the largest probability of "congested" while κ's mean is μ0
    /// (0.1, as for D2).
    #[serde(default = "defaults::alpha")]
    pub alpha: f64,
    /// β: the largest probability of "not congested" while κ's mean is μ1
    /// (0.05, as for D2).
    #[serde(default = "defaults::beta")]
    pub beta: f64,
}

impl Default for D2MeanConfig {
    fn default() -> Self {
        D2MeanConfig {
            mu0: defaults::d2m_mu0(),
            mu1: defaults::d2m_mu1(),
            sigma: defaults::d2m_sigma(),
            alpha: defaults::alpha(),
            beta: defaults::beta(),
        }
    }
}

mod defaults {
    pub fn alpha() -> f64 {
        0.1
    }
    pub fn beta() -> f64 {
        0.05
    }
    pub fn d1_window() -> f64 {
        5.0
    }
    pub fn d2_mu() -> f64 {
        0.056
    }
    pub fn d2_sigma0() -> f64 {
        0.962
    }
    pub fn d2_sigma1() -> f64 {
        20.392
    }
    pub fn d2m_mu0() -> f64 {
        0.589
    }
    pub fn d2m_mu1() -> f64 {
        100.067
    }
    pub fn d2m_sigma() -> f64 {
        6.780
    }
    pub fn half() -> f64 {
        0.5
    }
    pub fn one() -> f64 {
        1.0
    }
    pub fn percentile() -> f64 {
        0.95
    }
}
