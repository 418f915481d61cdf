/*
 * zoo_lite's JVM side of to_spark_df: a DataFrame decoded by Spark from an RDD of Arrow record
 * batches that Python workers computed, with no Python process at action time.
 *
 * Spark 4 removed the RDD form of ArrowConverters.toDataFrame (it now takes a driver-side
 * iterator), so the per-partition decode is written here. Each RDD element is one tag byte
 * followed by an Arrow IPC message: SCHEMA records (an IPC stream holding only a schema) are
 * for the driver; DATA records (one record batch, in Spark's own Arrow layout) become rows.
 *
 * Rebuild with scripts/build_jvm.sh after changing this file; a test checks the jar is current.
 */
package io.zoolite;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

public final class ArrowFrames {
  private ArrowFrames() {}

  /**
   * Fails, on the driver, if this Spark lacks the internals the helper calls (their signatures
   * change between Spark versions), so that a job never fails on it.
   */
  public static void checkLinks() throws ReflectiveOperationException {
    ArrowConverters$.class.getMethod("fromBatchIterator", scala.collection.Iterator.class, StructType.class,
        String.class, boolean.class, boolean.class, TaskContext.class);
    SparkSession.class.getMethod("internalCreateDataFrame", org.apache.spark.rdd.RDD.class, StructType.class, boolean.class);
  }

  /** The bodies (tag byte removed) of the records tagged {@code tag}, collected to the driver. */
  public static List<byte[]> collectTagged(JavaRDD<byte[]> records, byte tag) {
    List<byte[]> bodies = new ArrayList<>();
    for (byte[] record : records.filter(record -> record[0] == tag).collect()) {
      bodies.add(Arrays.copyOfRange(record, 1, record.length));
    }
    return bodies;
  }

  /** A DataFrame of {@code schemaJson} whose rows are the record batches tagged {@code tag}. */
  public static Dataset<Row> toDataFrame(JavaRDD<byte[]> records, byte tag, String schemaJson, SparkSession session) {
    StructType schema = (StructType) DataType.fromJson(schemaJson);
    String timeZone = session.sessionState().conf().sessionLocalTimeZone();
    JavaRDD<InternalRow> rows = records.mapPartitions(partition -> decode(partition, tag, schema, timeZone));
    return session.internalCreateDataFrame(rows.rdd(), schema, false);
  }

  // rows are views into the current Arrow batch; Spark's scan of the RDD copies each into an UnsafeRow
  private static Iterator<InternalRow> decode(Iterator<byte[]> partition, byte tag, StructType schema, String timeZone) {
    return CollectionConverters.asJava(ArrowConverters$.MODULE$.fromBatchIterator(
        CollectionConverters.asScala(new TaggedBodies(partition, tag)), schema, timeZone, false, false, TaskContext.get()));
  }

  /** The bodies of the records tagged {@code tag}, in order, skipping the others. */
  private static final class TaggedBodies implements Iterator<byte[]> {
    private final Iterator<byte[]> records;
    private final byte tag;
    private byte[] next;

    TaggedBodies(Iterator<byte[]> records, byte tag) {
      this.records = records;
      this.tag = tag;
      this.next = advance();
    }

    private byte[] advance() {
      while (records.hasNext()) {
        byte[] record = records.next();
        if (record[0] == tag) {
          return Arrays.copyOfRange(record, 1, record.length);
        }
      }
      return null;
    }

    @Override
    public boolean hasNext() {
      return next != null;
    }

    @Override
    public byte[] next() {
      if (next == null) {
        throw new NoSuchElementException();
      }
      byte[] body = next;
      next = advance();
      return body;
    }
  }
}
