// Runs the header consumers: each function is defined in the file of its name, which includes
// only the header it is named after and what that header's comments say to include.
#include <cstdio>
#include <iterator>

int header_world();
int header_dynamic();
int header_snapshot();
int header_query();
int header_accessor();
int header_resource();
int header_events();
int header_observer();
int header_relation();
int header_commands();
int header_entity();
int header_error();
int header_assert();
int header_fwd();
int header_component();
int header_reflect();
int header_event_kind();
int header_query_spec();
int header_system();
int header_system_relation();
int header_schedule();
int header_chunk();
int header_mut();
int header_serialize();
int header_transform();
int header_traverse();
int header_tessera();
int header_fixed_step();
int header_net_rollback();
int header_net();
int header_authoring();

namespace {
struct Consumer {
    const char* name;
    int (*run)();
};
const Consumer consumers[] = {{"world", &header_world},
                              {"dynamic", &header_dynamic},
                              {"snapshot", &header_snapshot},
                              {"query", &header_query},
                              {"accessor", &header_accessor},
                              {"resource", &header_resource},
                              {"events", &header_events},
                              {"observer", &header_observer},
                              {"relation", &header_relation},
                              {"commands", &header_commands},
                              {"entity", &header_entity},
                              {"error", &header_error},
                              {"assert", &header_assert},
                              {"fwd", &header_fwd},
                              {"component", &header_component},
                              {"reflect", &header_reflect},
                              {"event_kind", &header_event_kind},
                              {"query_spec", &header_query_spec},
                              {"system", &header_system},
                              {"system_relation", &header_system_relation},
                              {"schedule", &header_schedule},
                              {"chunk", &header_chunk},
                              {"mut", &header_mut},
                              {"fixed_step", &header_fixed_step},
                              {"net_rollback", &header_net_rollback},
                              {"net", &header_net},
                              {"authoring", &header_authoring},
                              {"serialize", &header_serialize},
                              {"transform", &header_transform},
                              {"traverse", &header_traverse},
                              {"tessera", &header_tessera}};
}  // namespace

int main() {
    int failed = 0;
    for (const Consumer& c : consumers) {
        const int rc = c.run();
        if (rc != 0) {
            std::printf("header_consumers: %s failed at check %d\n", c.name, rc);
            ++failed;
        }
    }
    std::printf("header_consumers: %d of %zu failed\n", failed, std::size(consumers));
    return failed == 0 ? 0 : 1;
}
