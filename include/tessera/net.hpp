/// @file net.hpp
/// Replication and rollback (opt-in; not included by tessera.hpp): server-to-client messages
/// as bytes (`Replicator`, net/replicator.hpp) and their client side (`Mirror`,
/// net/mirror.hpp), docs/networking.md; a ring of snapshots that replays late inputs
/// (`Rollback`, net/rollback.hpp), docs/rollback.md. The transport is the program's.
#pragma once

#include <tessera/net/mirror.hpp>
#include <tessera/net/replicator.hpp>
#include <tessera/net/rollback.hpp>
