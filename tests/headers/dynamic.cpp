// dynamic.hpp alone: StringTable, DynamicQuery and World's runtime-component members (world.hpp
// says to include dynamic.hpp for them).
#include <tessera/dynamic.hpp>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace ts = tessera;

int header_dynamic() {
    ts::StringTable table;
    const std::uint32_t id = table.intern("hello");
    const ts::StringTable copy(table);
    if (copy.find("hello") != id || copy.get(id) != "hello" || copy.size() != 2) return 1;

    ts::World w;
    const ts::ComponentId hp =
        w.component("HeaderHp", {{"hp", ts::Field::i32}, {"name", ts::Field::str}});
    const ts::ComponentId tag =
        w.component("HeaderTag", {}, ts::ComponentOptions{.enableable = true});
    const ts::FieldDef fields[] = {{"v", ts::Field::f32}};
    const ts::ComponentId v =
        w.component("HeaderV", std::span<const ts::FieldDef>(fields), ts::ComponentOptions{});
    (void)w.strings().intern("x");
    if (std::as_const(w).strings().size() < 2) return 2;

    const ts::Entity e = w.spawn();
    w.add(e, hp);
    w.add(e, tag);
    w.add(e, v);
    if (!w.has(e, hp) || !w.remove(e, v)) return 3;
    w.set_field(e, hp, "hp", 30);
    w.set_field(e, hp, std::size_t{1}, std::string_view("n"));
    if (w.get_field<std::int32_t>(e, hp, "hp") != 30) return 4;
    if (w.get_field<std::string_view>(e, hp, std::size_t{1}) != "n") return 5;
    w.enable(e, tag, false);
    if (w.is_enabled(e, tag)) return 6;
    if (w.changed_tick(e, hp) == 0 || w.added_tick(e, hp) == 0) return 7;

    ts::DynamicQuery q = w.query_dynamic(ts::QuerySpec{.all = {hp}});
    std::size_t rows = 0;
    q.each_chunk([&](ts::Chunk& c) { rows += c.count(); });
    ts::DynamicQuery direct(w, ts::QuerySpec{.all = {hp}, .none = {v}});
    if (rows != 1 || q.count() != 1 || direct.count() != 1) return 8;
    return 0;
}
