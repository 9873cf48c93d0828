// Fixture for CoreHygiene.DetectsViolation: this file must be flagged.
#include <thread>
inline long BadNow() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
