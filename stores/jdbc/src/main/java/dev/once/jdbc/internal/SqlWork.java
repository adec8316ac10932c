package dev.once.jdbc.internal;

import java.sql.SQLException;

/** A unit of work on a connection. */
@FunctionalInterface
public interface SqlWork<T> {
  T run() throws SQLException;
}
