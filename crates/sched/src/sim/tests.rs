//! Scenario-level tests of the simulator.
