/// @file net.hpp
/// Replication (opt-in; not included by tessera.hpp): server-to-client messages as bytes
/// (`Replicator`, net/replicator.hpp) and their client side (`Mirror`, net/mirror.hpp). The
/// transport is the program's. docs/networking.md is the guide.
#pragma once

#include <tessera/net/mirror.hpp>
#include <tessera/net/replicator.hpp>
// Rollback (net/rollback.hpp) is included here when it lands.
