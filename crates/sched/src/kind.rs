//! Selecting a scheduler by name, from config files, command lines and experiment matrices.

use std::fmt;
use std::str::FromStr;

use crate::{
    Lrf, PriorityBucket, PriorityBucketConfig, RoundRobin, SaEcf, SchedError, Scheduler,
    StreamEarliestCompletion, WeightedRoundRobin,
};

/// The schedulers this crate ships, each selectable by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchedulerKind {
    /// `priority-bucket`: [`PriorityBucket`] with this crate's defaults.
    PriorityBucket,
    /// `priority-bucket-paper`: [`PriorityBucket`] as the paper publishes it, for ablation:
    /// b_i is the bandwidth estimate alone and allocations are not revised when estimates drift
    /// ([`PriorityBucketConfig::paper`]).
    PriorityBucketPaper,
    /// `lrf`: [`Lrf`], lowest RTT first (the mp-quic default).
    Lrf,
    /// `sa-ecf`: [`SaEcf`], stream-aware earliest completion first.
    SaEcf,
    /// `wrr`: [`WeightedRoundRobin`], HTTP/2-style weighted round robin.
    Wrr,
    /// `sec`: [`StreamEarliestCompletion`], exclusive transmission in WRR completion order.
    Sec,
    /// `round-robin`: [`RoundRobin`], plain round robin for reference.
    RoundRobin,
}

impl SchedulerKind {
    /// Every scheduler, PriorityBucket first and the reference baselines last.
    pub const ALL: [Self; 7] = [
        Self::PriorityBucket,
        Self::PriorityBucketPaper,
        Self::Lrf,
        Self::SaEcf,
        Self::Wrr,
        Self::Sec,
        Self::RoundRobin,
    ];

    /// The name it is selected by.
    pub fn name(self) -> &'static str {
        match self {
            Self::PriorityBucket => "priority-bucket",
            Self::PriorityBucketPaper => "priority-bucket-paper",
            Self::Lrf => "lrf",
            Self::SaEcf => "sa-ecf",
            Self::Wrr => "wrr",
            Self::Sec => "sec",
            Self::RoundRobin => "round-robin",
        }
    }

    /// A new scheduler of this kind with its default configuration.
    pub fn build(self) -> Box<dyn Scheduler> {
        match self {
            Self::PriorityBucket => Box::<PriorityBucket>::default(),
            Self::PriorityBucketPaper => {
                Box::new(PriorityBucket::new(PriorityBucketConfig::paper()))
            }
            Self::Lrf => Box::<Lrf>::default(),
            Self::SaEcf => Box::<SaEcf>::default(),
            Self::Wrr => Box::<WeightedRoundRobin>::default(),
            Self::Sec => Box::<StreamEarliestCompletion>::default(),
            Self::RoundRobin => Box::<RoundRobin>::default(),
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SchedulerKind {
    type Err = SchedError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| SchedError::UnknownScheduler(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_and_builds_that_scheduler() {
        for kind in SchedulerKind::ALL {
            assert_eq!(kind.name().parse::<SchedulerKind>(), Ok(kind));
            assert_eq!(kind.build().name(), kind.name());
        }
    }

    #[test]
    fn unknown_names_are_refused() {
        assert_eq!(
            "fastest".parse::<SchedulerKind>(),
            Err(SchedError::UnknownScheduler("fastest".into()))
        );
    }
}
