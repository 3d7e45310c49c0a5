package dev.rolloutingest.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A self-signed key for 127.0.0.1 and localhost (two days), made by the JDK's keytool as an operator would make one,
 * in a PKCS12 keystore: for servers the tests run on TLS and the clients that must trust them.
 */
public final class SelfSignedCertificate {
    /** The keystore's and trust store's password: made for one test run, guarding nothing. */
    public static final String PASSWORD = "changeit";

    private static final String ALIAS = "tls";

    private final Path keystore;
    private final X509Certificate certificate;

    private SelfSignedCertificate(Path keystore, X509Certificate certificate) {
        this.keystore = keystore;
        this.certificate = certificate;
    }

    /** Makes the key into {@code keystore} (replacing a file there). */
    public static SelfSignedCertificate create(Path keystore) {
        try {
            Files.createDirectories(keystore.toAbsolutePath().getParent());
            Files.deleteIfExists(keystore);
            Process keytool = new ProcessBuilder(List.of(
                            Path.of(System.getProperty("java.home"), "bin", "keytool")
                                    .toString(),
                            "-genkeypair",
                            "-alias",
                            ALIAS,
                            "-keyalg",
                            "RSA",
                            "-keysize",
                            "2048",
                            "-validity",
                            "2",
                            "-dname",
                            "CN=localhost",
                            "-ext",
                            "SAN=ip:127.0.0.1,dns:localhost",
                            "-storetype",
                            "PKCS12",
                            "-keystore",
                            keystore.toString(),
                            "-storepass",
                            PASSWORD))
                    .redirectErrorStream(true)
                    .start();
            String output = new String(keytool.getInputStream().readAllBytes());
            if (keytool.waitFor() != 0) {
                throw new IllegalStateException("keytool failed: " + output);
            }
            KeyStore store = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(keystore)) {
                store.load(in, PASSWORD.toCharArray());
            }
            return new SelfSignedCertificate(keystore, (X509Certificate) store.getCertificate(ALIAS));
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot make a key in " + keystore, e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("Cannot read the key made in " + keystore, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The PKCS12 keystore holding the key and its certificate (password {@link #PASSWORD}). */
    public Path keystore() {
        return keystore;
    }

    /** Writes the certificate as PEM (what a client not on the JVM is told to trust). */
    public Path writePem(Path pem) {
        try {
            Files.writeString(
                    pem,
                    "-----BEGIN CERTIFICATE-----\n"
                            + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(certificate.getEncoded())
                            + "\n-----END CERTIFICATE-----\n");
            return pem;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Writes a PKCS12 trust store (password {@link #PASSWORD}) holding only the certificate: for another JVM. */
    public Path writeTrustStore(Path path) {
        try (OutputStream out = Files.newOutputStream(path)) {
            trustStore().store(out, PASSWORD.toCharArray());
            return path;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A TLS context that trusts this certificate (and nothing else). */
    public SSLContext trustingContext() {
        try {
            TrustManagerFactory managers = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            managers.init(trustStore());
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, managers.getTrustManagers(), null);
            return context;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private KeyStore trustStore() throws IOException, GeneralSecurityException {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        trust.setCertificateEntry(ALIAS, certificate);
        return trust;
    }
}
