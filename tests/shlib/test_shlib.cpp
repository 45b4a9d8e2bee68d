// Component ids across shared objects: see tests/shlib/CMakeLists.txt.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include <string>

#include "shared_component.hpp"

namespace {

/// The host's own anonymous Label: a third distinct type of that name.
struct Label {
    int value;
};

}  // namespace

/// Plugin C defines another `Conflicting` (three doubles): its registration clashes with this.
struct Conflicting {
    int value;
};

namespace {

/// A dlopen()ed shared object, closed on destruction.
class Plugin {
public:
    explicit Plugin(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
        if (handle_ == nullptr) {
            const char* why = dlerror();
            error_ = why != nullptr ? why : "unknown dlopen error";
        }
    }
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;
    ~Plugin() {
        if (handle_ != nullptr) {
            dlclose(handle_);
        }
    }

    [[nodiscard]] bool loaded() const { return handle_ != nullptr; }
    [[nodiscard]] const std::string& error() const { return error_; }

    template <class Fn>
    [[nodiscard]] Fn symbol(const char* name) const {
        return reinterpret_cast<Fn>(dlsym(handle_, name));
    }

private:
    void* handle_;
    std::string error_;
};

class SharedLibrary : public ::testing::Test {
protected:
    Plugin a_{TESSERA_PLUGIN_A_PATH};
    Plugin b_{TESSERA_PLUGIN_B_PATH};

    void SetUp() override {
        ASSERT_TRUE(a_.loaded()) << a_.error();
        ASSERT_TRUE(b_.loaded()) << b_.error();
        add_ = a_.symbol<PluginAddFn>("tessera_plugin_a_add");
        read_ = b_.symbol<PluginReadFn>("tessera_plugin_b_read");
        label_a_ = a_.symbol<PluginLabelFn>("tessera_plugin_a_label_id");
        label_b_ = b_.symbol<PluginLabelFn>("tessera_plugin_b_label_id");
        ASSERT_NE(add_, nullptr);
        ASSERT_NE(read_, nullptr);
        ASSERT_NE(label_a_, nullptr);
        ASSERT_NE(label_b_, nullptr);
    }

    PluginAddFn add_ = nullptr;
    PluginReadFn read_ = nullptr;
    PluginLabelFn label_a_ = nullptr;
    PluginLabelFn label_b_ = nullptr;
};

TEST_F(SharedLibrary, PluginsAgreeOnIdOfSharedTypeAndSeeEachOthersData) {
    tessera::World world;
    const tessera::Entity e = world.spawn();

    const std::uint32_t id_a = add_(&world, e, 1.5f, -2.5f);
    SharedPos seen{0.0f, 0.0f};
    const std::uint32_t id_b = read_(&world, e, &seen);

    EXPECT_EQ(id_a, id_b);
    EXPECT_EQ(id_a, tessera::component_id<SharedPos>().value);
    EXPECT_EQ(seen.x, 1.5f);
    EXPECT_EQ(seen.y, -2.5f);

    // The host sees plugin A's component under its own instantiation of the type, too.
    ASSERT_TRUE(world.has<SharedPos>(e));
    EXPECT_EQ(world.get<SharedPos>(e).x, 1.5f);
    EXPECT_EQ(world.get<SharedPos>(e).y, -2.5f);
}

TEST_F(SharedLibrary, AnonymousNamespaceTypesWithOneNameGetDistinctIds) {
    const std::uint32_t label_a = label_a_();
    const std::uint32_t label_b = label_b_();
    const std::uint32_t label_host = tessera::component_id<Label>().value;

    EXPECT_NE(label_a, label_b);
    EXPECT_NE(label_a, label_host);
    EXPECT_NE(label_b, label_host);
    // Stable: asking again gives the same id.
    EXPECT_EQ(label_a, label_a_());
    EXPECT_EQ(label_b, label_b_());
}

TEST(SharedLibraryConflict, LookupsThatCannotThrowFindAConflictingTypeAbsent) {
    // The host registered its Conflicting before main; plugin C's fails as it loads.
    tessera::World world;
    const tessera::Entity e = world.spawn(Conflicting{7});
    ASSERT_TRUE(world.has<Conflicting>(e));
    const Plugin c{TESSERA_PLUGIN_C_PATH};
    ASSERT_TRUE(c.loaded()) << c.error();
    const auto probe = c.symbol<PluginProbeFn>("tessera_plugin_c_probe");
    ASSERT_NE(probe, nullptr);
    EXPECT_EQ(probe(&world, e), 0u) << "bits: see PluginProbeFn";
    EXPECT_EQ(world.get<Conflicting>(e).value, 7) << "the host's own type is untouched";
}

TEST_F(SharedLibrary, DistinctAnonymousTypesCoexistOnOneEntity) {
    tessera::World world;
    const tessera::Entity e = world.spawn(Label{7});
    add_(&world, e, 3.0f, 4.0f);
    SharedPos seen{0.0f, 0.0f};
    read_(&world, e, &seen);
    EXPECT_EQ(seen.x, 3.0f);
    EXPECT_EQ(world.get<Label>(e).value, 7);
}

}  // namespace
