// A system returning something other than void or ts::Status is rejected where it is added.
// expect: a system returns void or ts::Status
#include <tessera/schedule.hpp>

int main() {
    tessera::Schedule schedule;
    schedule.add("counts", [](tessera::World&) { return 42; });
}
