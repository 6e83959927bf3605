package burst

// Test helpers for the external tests (package prober_test) that render
// the report of a real burst.
var (
	NewTestPlan     = testPlan
	NewTestStepPlan = testStepPlan
	NewTestRunner   = testRunner
)
