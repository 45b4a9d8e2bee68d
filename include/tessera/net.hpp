/// @file net.hpp
/// Replication and rollback (opt-in; not included by tessera.hpp): server-to-client messages as
/// bytes
/// (`Replicator`, net/replicator.hpp) and their client side (`Mirror`, net/mirror.hpp). The
/// transport is the program's. Peer-to-peer lockstep: `Rollback<Input>` (net/rollback.hpp). The
/// guides are docs/networking.md and docs/rollback.md.
#pragma once

#include <tessera/net/mirror.hpp>
#include <tessera/net/replicator.hpp>
#include <tessera/net/rollback.hpp>
