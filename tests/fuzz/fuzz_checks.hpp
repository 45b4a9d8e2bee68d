// The checks both loader fuzz targets (load_fuzz.cpp: binary ts::load; json_fuzz.cpp:
// ts::from_json) run on a world an input loaded into. A finding is a crash, a sanitizer report,
// a leak, a hang, an exception other than ts::Error(invalid_argument), or a world that a
// successful load left inconsistent:
//   - a failed load leaves the target empty;
//   - spawning on a loaded world never returns an index in use (the free list is sound);
//   - a loaded world can be iterated, hashed, cloned, snapshotted and restored, saved again
//     (save(load(save(loaded))) == save(loaded), with an equal state_hash) and put through
//     JSON (to_json + from_json give the same entities);
//   - despawning every dynamic entity (cascades included) leaves exactly the permanent ones.
// replay.cpp runs either target over a corpus directory without libFuzzer.
#pragma once

#include "fuzz_world.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

namespace fuzzw {

/// Inputs the target's loader accepted (replay.cpp reports it).
inline std::size_t& accepted_inputs() {
    static std::size_t n = 0;
    return n;
}

/// The target's name, for findings ("load_fuzz", "json_fuzz"); set by the entry point.
inline const char*& target_name() {
    static const char* name = "fuzz";
    return name;
}

[[noreturn]] inline void finding(const char* what) {
    std::fprintf(stderr, "%s: %s\n", target_name(), what);
    std::abort();
}

inline void check(bool ok, const char* what) {
    if (!ok) finding(what);
}

// Reads everything a loaded world holds through the public API.
inline std::uint64_t walk(ts::World& w, const fuzzw::Runtime& rt) {
    std::uint64_t sum = 0;
    for (const ts::Entity e : w.entities()) {
        check(w.is_alive(e), "entities() lists a dead entity");
        sum += e.index;
        if (const fuzzw::Name* n = w.try_get<fuzzw::Name>(e)) sum += n->text.size() + n->n;
        if (const fuzzw::Stat* s = w.try_get<fuzzw::Stat>(e))
            sum += w.strings().get(s->label.value).size();
        if (w.has<fuzzw::Ai>(e)) sum += w.is_enabled<fuzzw::Ai>(e) ? 1 : 0;
        if (const fuzzw::Buff* b = w.try_get<fuzzw::Buff>(e)) sum += b->what.size();
        if (const fuzzw::Link* l = w.relation<fuzzw::Link>(e)) sum += l->why.size();
        for (const ts::Entity t : w.targets<fuzzw::Link>(e)) {
            check(w.is_alive(t), "a Link target is dead");
            check(w.related<fuzzw::Link>(e, t), "related<Link> disagrees with targets<Link>");
        }
        for (const ts::Entity t : w.targets<fuzzw::Likes>(e))
            check(w.is_alive(t), "a Likes target is dead");
        for (const ts::Entity s : w.sources<fuzzw::Link>(e))
            check(w.related<fuzzw::Link>(s, e), "a bad reverse Link");
        for (const ts::Entity p : w.parents(e)) check(w.is_alive(p), "a parent is dead");
        for (const ts::Entity c : w.children(e))
            check(w.related<ts::ChildOf>(c, e), "a bad reverse ChildOf");
        if (w.has(e, rt.all)) {
            sum += w.get_field<std::string>(e, rt.all, "s").size();
            sum += static_cast<std::uint64_t>(w.get_field<double>(e, rt.all, "u32"));
        }
    }
    w.query<ts::Entity, const fuzzw::Pos&>().each(
        [&](ts::Entity e, const fuzzw::Pos&) { sum += e.index; });
    w.query<const fuzzw::Ai&, const fuzzw::Nested&>().each(
        [&](const fuzzw::Ai& a, const fuzzw::Nested& n) { sum += a.mode + n.id; });
    w.query<ts::Entity, const fuzzw::Buff&, const fuzzw::Pos*>().each(
        [&](ts::Entity e, const fuzzw::Buff& b, const fuzzw::Pos* p) {
            check(w.has<fuzzw::Buff>(e), "a query over a sparse term visits an entity without it");
            sum += b.what.size() + (p != nullptr ? 1 : 0);
        });
    w.query_dynamic({.all = {rt.flag}}).each_chunk([&](ts::Chunk& c) {
        const std::uint8_t* flags = c.enabled(rt.flag);
        for (std::size_t r = 0; r < c.count(); ++r) sum += flags[r];
    });
    return sum;
}

// The free list holds distinct dead indices: spawning never returns a live or an already
// returned index. Checked on a clone before anything walks the free list (a looping free list
// makes save and to_json loop forever). `max_free` bounds the list's length (the input holds
// at most that many free indices).
inline void check_free_list(const ts::World& w, std::size_t max_free) {
    ts::World c = w.clone();
    std::unordered_set<std::uint32_t> used;
    for (const ts::Entity e : c.entities()) used.insert(e.index);
    for (std::size_t i = 0; i <= max_free; ++i) {
        if (!used.insert(c.spawn().index).second)
            finding(
                "spawn returned an index in use: the loaded free list repeats an index or loops");
    }
}

inline void exercise(ts::World& w, const fuzzw::Runtime& rt, std::size_t max_free) {
    (void)walk(w, rt);
    check_free_list(w, max_free);
    const std::uint64_t hash = ts::state_hash(w);

    // Saved again, it loads again to the same bytes and hash.
    const std::vector<std::byte> bytes = ts::save(w);
    {
        ts::World again;
        ts::load(bytes, again);
        check(ts::save(again) == bytes, "save(load(save(loaded))) != save(loaded)");
        check(ts::state_hash(again) == hash, "state_hash changed through save/load");
        check(again.entities() == w.entities(), "entities changed through save/load");
    }
    // JSON takes whatever the binary loader accepted (values may change only for NaN payloads).
    {
        ts::World from_json;
        ts::from_json(ts::to_json(w), from_json);
        check(from_json.entities() == w.entities(), "entities changed through JSON");
    }
    // Copies.
    {
        ts::World copy = w.clone();
        check(ts::state_hash(copy) == hash, "state_hash changed through clone");
    }
    const ts::Snapshot snap = w.snapshot();

    // Structural changes on the loaded world: despawn every dynamic entity (cascades included).
    std::size_t permanent = 0;
    for (const ts::Entity e : w.entities()) {
        if (w.is_permanent(e)) {
            ++permanent;
            continue;
        }
        (void)w.despawn(e);
    }
    check(w.count() == permanent, "despawning every dynamic entity left others");
    (void)w.spawn(fuzzw::Pos{}, fuzzw::Name{"new", 1}, fuzzw::Buff{"new", 1});
    (void)walk(w, rt);

    w.restore(snap);
    check(ts::state_hash(w) == hash, "state_hash changed through snapshot/restore");
    (void)walk(w, rt);
}

}  // namespace fuzzw
