"""Where data lives: open local, ``s3://`` and ``hdfs://`` paths the same way in the driver and in
every task, with the user's credentials.

Python code (the pandas backend's readers, :func:`~zoo_lite.data.image.read_images`, saved
models) reads object stores through fsspec: ``s3://`` (and ``s3a://``) through s3fs, the ``s3``
extra. The options for a path are resolved once, on the driver, from three places, the later
winning:

1. Spark's ``spark.hadoop.fs.s3a.*`` conf (access key, secret key, session token, endpoint), so a
   job configured for Spark's own S3 reader works unchanged;
2. the driver's environment at the time of the call (``AWS_ACCESS_KEY_ID``,
   ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL_S3`` or
   ``AWS_ENDPOINT_URL``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``): executors and Ray workers
   started before the variables were set do not have them, so they travel with the tasks;
3. ``storage_options=``, as pandas takes it.

Credentials found nowhere are left to s3fs's own chain in each process (``~/.aws``, an instance
role). Spark's own readers (the spark backend, Spark DataFrames) read ``s3a://`` through Hadoop's
S3A file system, which needs ``hadoop-aws`` on Spark's classpath: :func:`check_spark_reads` says
which package and conf to add when it is missing.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional

from zoo_lite.errors import DataReadError, InvalidArgumentError

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["protocol_of", "is_object_store", "storage_options_for", "filesystem", "storage_errors",
           "missing_object_error", "check_spark_reads", "as_spark_path"]

#: the protocols of Amazon S3 and S3-compatible stores, as fsspec and Hadoop name them
S3_PROTOCOLS = ("s3", "s3a", "s3n")
#: s3fs argument of each environment variable, in the order later ones win
_S3_ENVIRONMENT = (
    ("AWS_ACCESS_KEY_ID", "key"),
    ("AWS_SECRET_ACCESS_KEY", "secret"),
    ("AWS_SESSION_TOKEN", "token"),
    ("AWS_ENDPOINT_URL", "endpoint_url"),
    ("AWS_ENDPOINT_URL_S3", "endpoint_url"),
    ("AWS_DEFAULT_REGION", "region"),
    ("AWS_REGION", "region"),
)
#: s3fs argument of each Hadoop S3A setting (Spark conf ``spark.hadoop.<name>``)
_S3A_CONF = (
    ("fs.s3a.access.key", "key"),
    ("fs.s3a.secret.key", "secret"),
    ("fs.s3a.session.token", "token"),
    ("fs.s3a.endpoint", "endpoint_url"),
    ("fs.s3a.endpoint.region", "region"),
)
_CREDENTIALS_ADVICE = ("check the credentials: storage_options={'key': ..., 'secret': ...}, AWS_ACCESS_KEY_ID and "
                       "AWS_SECRET_ACCESS_KEY in the driver's environment, or Spark's spark.hadoop.fs.s3a.access.key "
                       "and spark.hadoop.fs.s3a.secret.key")
_HADOOP_AWS_CLASS = "org.apache.hadoop.fs.s3a.S3AFileSystem"


def protocol_of(path: str) -> str:
    """The protocol of ``path``, lower case; ``"file"`` for a local path.

    Examples
    --------
    >>> protocol_of("s3a://bucket/a.csv"), protocol_of("/data/a.csv"), protocol_of("file:/data")
    ('s3a', 'file', 'file')
    """
    if "://" in path:
        return path.split("://", 1)[0].lower()
    return "file"


def is_object_store(path: str) -> bool:
    """Whether ``path`` names an S3 (or S3-compatible) object.

    Examples
    --------
    >>> is_object_store("s3://bucket/key"), is_object_store("hdfs://nn/data")
    (True, False)
    """
    return protocol_of(path) in S3_PROTOCOLS


def _as_fsspec_path(path: str) -> str:
    """``path`` with Hadoop's ``s3a://``/``s3n://`` written ``s3://``, as s3fs names objects."""
    protocol = protocol_of(path)
    return "s3://" + path.split("://", 1)[1] if protocol in ("s3a", "s3n") else path


def as_spark_path(path: str) -> str:
    """``path`` as Spark's readers name it: ``s3://`` becomes Hadoop's ``s3a://``.

    Examples
    --------
    >>> as_spark_path("s3://bucket/data"), as_spark_path("/data")
    ('s3a://bucket/data', '/data')
    """
    return "s3a://" + path.split("://", 1)[1] if protocol_of(path) == "s3" else path


def _spark_s3a_options() -> dict[str, Any]:
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return {}
    conf = sc.getConf()
    options = {}
    for name, argument in _S3A_CONF:
        value = conf.get(f"spark.hadoop.{name}")
        if value:
            options[argument] = value if argument != "endpoint_url" or "://" in value else f"https://{value}"
    return options


def _environment_options(environment: Mapping[str, str]) -> dict[str, Any]:
    return {argument: environment[name] for name, argument in _S3_ENVIRONMENT if environment.get(name)}


def storage_options_for(path: str, storage_options: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """The fsspec options to open ``path`` with, in the driver and in tasks (see the module's
    docstring for where they come from). Only an object store takes options from Spark's conf
    and the environment.

    Raises
    ------
    InvalidArgumentError
        ``storage_options`` is not a dict.

    Examples
    --------
    >>> storage_options_for("/data/a.csv")
    {}
    >>> storage_options_for("s3://bucket/a.csv", {"key": "AKIA", "secret": "s3cr3t", "region": "eu-west-1"})
    {'key': 'AKIA', 'secret': 's3cr3t', 'client_kwargs': {'region_name': 'eu-west-1'}}
    """
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise InvalidArgumentError(f"storage_options={storage_options!r} must be a dict of filesystem options, "
                                   "e.g. {'key': ..., 'secret': ..., 'endpoint_url': ...} for s3://")
    options: dict[str, Any] = {}
    if is_object_store(path):
        options.update(_spark_s3a_options())
        options.update(_environment_options(os.environ))
    options.update(storage_options or {})
    return _s3fs_layout(options) if is_object_store(path) else options


def _s3fs_layout(options: dict[str, Any]) -> dict[str, Any]:
    """s3fs takes the region inside ``client_kwargs``."""
    region = options.pop("region", None)
    if region is not None:
        options["client_kwargs"] = {"region_name": region, **options.get("client_kwargs", {})}
    return options


def filesystem(path: str, storage_options: Optional[Mapping[str, Any]] = None, argument: str = "path") -> tuple[Any, str]:
    """The fsspec filesystem that opens ``path`` with ``storage_options`` (as
    :func:`storage_options_for` resolved them), and the path as that filesystem names it.

    Raises
    ------
    DataReadError
        No filesystem can open ``path``: the message says what to install (s3fs for ``s3://``,
        libhdfs for ``hdfs://``).

    Examples
    --------
    >>> fs, name = filesystem("/tmp")
    >>> type(fs).__name__, name
    ('LocalFileSystem', '/tmp')
    """
    import fsspec

    protocol = protocol_of(path)
    try:
        return fsspec.core.url_to_fs(_as_fsspec_path(path), **dict(storage_options or {}))
    except ImportError as error:
        if protocol in S3_PROTOCOLS:
            raise DataReadError(f"{argument}={path!r}: reading and writing s3:// paths from Python needs s3fs: "
                                "pip install 'zoo_lite[s3]' (or pip install s3fs) on the driver and every host") from error
        raise DataReadError(f"{argument}={path!r}: no filesystem for {protocol}:// is installed ({error})") from error
    except (OSError, ValueError) as error:
        if protocol in ("hdfs", "viewfs"):
            raise DataReadError(
                f"{argument}={path!r}: pyarrow's HadoopFileSystem could not start ({error}); it needs libhdfs: "
                "a Hadoop client on every host with HADOOP_HOME, JAVA_HOME and CLASSPATH=$(hadoop classpath --glob) "
                "set, or read the files with backend='spark'") from error
        raise DataReadError(f"{argument}={path!r}: no filesystem can open it ({type(error).__name__}: {error})") from error


def _bucket_of(path: str) -> str:
    """The bucket an object-store ``path`` names."""
    return _as_fsspec_path(path).split("://", 1)[1].split("/", 1)[0]


def _bucket_error(path: str, argument: str) -> str:
    return f"{argument}={path!r}: the bucket {_bucket_of(path)!r} does not exist; check the bucket name (and the endpoint)"


@contextlib.contextmanager
def storage_errors(path: str, argument: str) -> Iterator[None]:
    """Turn an object store's refusals while working on ``path`` into errors that name the path
    and the fix: a refused access (wrong or missing credentials), a missing bucket.

    Examples
    --------
    >>> with storage_errors("s3://bucket/a.csv", "file_path"):
    ...     raise PermissionError("Forbidden")
    Traceback (most recent call last):
    ...
    zoo_lite.errors.DataReadError: file_path='s3://bucket/a.csv': the object store refused access (PermissionError: Forbidden); check the credentials: ...
    """
    try:
        yield
    except PermissionError as error:
        raise DataReadError(f"{argument}={path!r}: the object store refused access ({type(error).__name__}: {error}); "
                            f"{_CREDENTIALS_ADVICE}") from error
    except FileNotFoundError as error:
        if is_object_store(path) and "bucket does not exist" in str(error):
            raise DataReadError(_bucket_error(path, argument)) from error
        raise


def missing_object_error(fs: Any, path: str, argument: str) -> str:
    """The message for an object-store ``path`` that does not exist: its bucket is missing, or
    the key is."""
    bucket = _bucket_of(path)
    with storage_errors(path, argument):
        has_bucket = fs.exists(bucket)
    if not has_bucket:
        return _bucket_error(path, argument)
    return f"Path does not exist: {argument}={path!r} (no such key in bucket {bucket!r}); check the path"


def check_spark_reads(sc: "SparkContext", path: str, argument: str) -> None:
    """Refuse an object-store ``path`` for Spark's own readers and writers when Hadoop's S3A file
    system is not on Spark's classpath, saying which package and conf to add.

    Raises
    ------
    DataReadError
        ``path`` is ``s3://``/``s3a://`` and the JVM lacks ``hadoop-aws``.

    Examples
    --------
    >>> from zoo_lite import init_orca_context
    >>> sc = init_orca_context(cores=2)
    >>> check_spark_reads(sc, "/tmp/data", "file_path")   # a local path: nothing to check
    """
    if not is_object_store(path) or _jvm_has_class(sc, _HADOOP_AWS_CLASS):
        return
    hadoop = sc._jvm.org.apache.hadoop.util.VersionInfo.getVersion()
    raise DataReadError(
        f"{argument}={path!r}: Spark reads s3a:// with Hadoop's S3A file system, which is not on its classpath; start "
        f"Spark with spark.jars.packages=org.apache.hadoop:hadoop-aws:{hadoop} (init_orca_context(..., "
        f"conf={{'spark.jars.packages': 'org.apache.hadoop:hadoop-aws:{hadoop}'}}) or spark-submit --packages), and "
        "the credentials in spark.hadoop.fs.s3a.access.key / secret.key (and fs.s3a.endpoint for an S3-compatible "
        "server); or read with backend='pandas', which reads s3:// through s3fs")


def _jvm_has_class(sc: "SparkContext", name: str) -> bool:
    try:
        sc._jvm.java.lang.Class.forName(name, False, sc._jvm.java.lang.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException in its own error
        return False
