//! The paths the [`oracle`](super::oracle) bounds a page load over: a rate and a one-way delay
//! each.
//!
//! Knob names follow the s2n-quic and quinn test harnesses (`set_delay`, `set_rate`) so these
//! read like the netns testbed's links.

use std::time::Duration;

use super::SimError;
use mpquic_scenario::{PathSpec, Scenario};

/// One path: a bottleneck of `rate` bit/s with a one-way `delay`, the same in both directions.
///
/// Random loss and the bottleneck's queue only delay bytes, so the oracle, a lower bound, has
/// no use for them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathConfig {
    rate_bps: u64,
    delay: Duration,
}

impl PathConfig {
    /// A path of `rate_bps` bit/s and a one-way `delay`.
    pub fn new(rate_bps: u64, delay: Duration) -> Self {
        Self { rate_bps, delay }
    }

    /// Sets the bottleneck rate in bits per second (must be positive).
    pub fn set_rate(&mut self, rate_bps: u64) -> &mut Self {
        self.rate_bps = rate_bps;
        self
    }

    /// Sets the one-way delay (the same in both directions).
    pub fn set_delay(&mut self, delay: Duration) -> &mut Self {
        self.delay = delay;
        self
    }

    /// The rate in bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// The one-way delay.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The rate in bytes per second.
    pub fn bytes_per_sec(&self) -> f64 {
        self.rate_bps as f64 / 8.0
    }

    fn validate(&self, index: usize) -> Result<(), SimError> {
        let reason = if self.rate_bps == 0 {
            "the rate must be positive"
        } else if self.delay > Duration::from_secs(60) {
            "a one-way delay above 60 s is not a path"
        } else {
            return Ok(());
        };
        Err(SimError::InvalidPath {
            index,
            reason: reason.to_owned(),
        })
    }
}

impl From<&PathSpec> for PathConfig {
    fn from(spec: &PathSpec) -> Self {
        Self::new(spec.rate_bps, spec.one_way_delay)
    }
}

/// The paths of one page load, numbered from 0 in the order they are added.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimConfig {
    paths: Vec<PathConfig>,
}

impl SimConfig {
    /// A configuration without paths.
    pub fn new() -> Self {
        Self::default()
    }

    /// The paths of a scenario preset.
    pub fn from_scenario(scenario: &Scenario) -> Self {
        let mut config = Self::new();
        for spec in scenario.paths {
            config.add_path(spec.into());
        }
        config
    }

    /// Adds a path; paths are numbered from 0 in the order they are added.
    pub fn add_path(&mut self, path: PathConfig) -> &mut Self {
        self.paths.push(path);
        self
    }

    /// A path to adjust with its `set_*` knobs.
    pub fn path_mut(&mut self, index: usize) -> Option<&mut PathConfig> {
        self.paths.get_mut(index)
    }

    /// The paths.
    pub fn paths(&self) -> &[PathConfig] {
        &self.paths
    }

    /// Checks that there are 1 to [`MAX_PATHS`](crate::MAX_PATHS) paths, each with a positive
    /// rate and a one-way delay of at most 60 s.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.paths.is_empty() {
            return Err(SimError::InvalidConfig(
                "at least one path is needed".into(),
            ));
        }
        if self.paths.len() > crate::MAX_PATHS {
            return Err(SimError::InvalidConfig(format!(
                "at most {} paths",
                crate::MAX_PATHS
            )));
        }
        for (index, path) in self.paths.iter().enumerate() {
            path.validate(index)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_gives_its_paths_rates_and_delays_in_order() {
        for scenario in Scenario::ALL {
            let config = SimConfig::from_scenario(scenario);
            assert_eq!(config.paths().len(), scenario.paths.len());
            for (path, spec) in config.paths().iter().zip(scenario.paths) {
                assert_eq!(path.rate_bps(), spec.rate_bps);
                assert_eq!(path.delay(), spec.one_way_delay);
            }
            config.validate().unwrap();
        }
    }

    #[test]
    fn invalid_paths_are_errors() {
        assert!(matches!(
            SimConfig::new().validate(),
            Err(SimError::InvalidConfig(_))
        ));
        let mut config = SimConfig::new();
        config.add_path(PathConfig::new(8_000_000, Duration::from_millis(10)));
        config.validate().unwrap();
        config.path_mut(0).unwrap().set_rate(0);
        assert!(matches!(
            config.validate(),
            Err(SimError::InvalidPath { index: 0, .. })
        ));
        // Absurd rates and delays are refused, not multiplied into an overflow.
        let mut config = SimConfig::new();
        config.add_path(PathConfig::new(
            u64::MAX,
            Duration::from_secs(10_000_000_000),
        ));
        assert!(matches!(
            config.validate(),
            Err(SimError::InvalidPath { index: 0, .. })
        ));
        let mut config = SimConfig::new();
        for _ in 0..=crate::MAX_PATHS {
            config.add_path(PathConfig::new(1_000_000, Duration::ZERO));
        }
        assert!(matches!(config.validate(), Err(SimError::InvalidConfig(_))));
    }
}
