//! Placeholder: the fake NVML library (issue 3).
