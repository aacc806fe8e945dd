'use strict';
// Preload for Node (`NODE_OPTIONS=--require scripts/bind-localhost.cjs`).
//
// The MCP conformance suite starts its mock servers with `server.listen(0)`,
// which binds every interface. This machine may only listen on loopback, so this
// file patches net.Server.prototype.listen (http/https/express servers inherit
// it) to supply host 127.0.0.1 whenever the caller named a port but no host.
// Explicit hosts, Unix socket paths, handles and file descriptors are left alone.

const net = require('net');

const LOOPBACK = process.env.BIND_LOCALHOST_HOST || '127.0.0.1';
const originalListen = net.Server.prototype.listen;

function isPort(value) {
  if (typeof value === 'number') return true;
  return typeof value === 'string' && /^\d+$/.test(value);
}

function withLoopback(args) {
  if (args.length === 0 || typeof args[0] === 'function') {
    // listen() / listen(callback): a random port on every interface.
    return [0, LOOPBACK, ...args];
  }
  const first = args[0];
  if (isPort(first)) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] === 'string') return args; // explicit host
    return [first, LOOPBACK, ...args.slice(1)];
  }
  if (first && typeof first === 'object' && !(first instanceof net.Server)) {
    // listen(options[, callback]); options may instead name a path/handle/fd.
    const isNetworkOptions =
      first.path === undefined &&
      first.handle === undefined &&
      first._handle === undefined &&
      first.fd === undefined;
    if (isNetworkOptions && (first.host === undefined || first.host === null)) {
      return [{ ...first, host: LOOPBACK }, ...args.slice(1)];
    }
  }
  return args; // path string, handle, server, or explicit host
}

// `listen(port, host)` resolves the host asynchronously, so `server.address()` is null
// right after the call -- but the suite reads `app.listen(0).address().port` at once.
// For the forms we rewrite to a numeric port on an IPv4 literal, bind synchronously
// through Node's (long-standing, internal) `_listen2`, which is what listen() ends up
// calling after the lookup; fall back to the normal path if it is missing.
function listenNow(server, args) {
  if (typeof server._listen2 !== 'function' || server._handle || !/^\d+\.\d+\.\d+\.\d+$/.test(LOOPBACK)) {
    return false;
  }
  let port = 0;
  let rest = args;
  if (args.length > 0 && isPort(args[0])) {
    port = Number(args[0]);
    rest = args.slice(1);
  } else if (args.length > 0 && typeof args[0] !== 'function') {
    return false;
  }
  let backlog = 511;
  let callback;
  for (const a of rest) {
    if (typeof a === 'number') backlog = a;
    else if (typeof a === 'function') callback = a;
    else if (a !== undefined) return false;
  }
  if (callback) server.once('listening', callback);
  server._listen2(LOOPBACK, port, 4, backlog, undefined, 0);
  return true;
}

net.Server.prototype.listen = function listen(...args) {
  const rewritten = withLoopback(args);
  if (rewritten !== args && (args.length === 0 || typeof args[0] !== 'object') && listenNow(this, args)) {
    return this;
  }
  return originalListen.apply(this, rewritten);
};
