package dev.rolloutingest.launcher;

import dev.rolloutingest.embedded.SelfSignedCertificate;
import java.nio.file.Path;
import javax.net.ssl.SSLContext;

/** Test TLS: a key made by the JDK's keytool, as an operator would make one. */
final class SelfSignedTls {
    static final String PASSWORD = SelfSignedCertificate.PASSWORD;

    private SelfSignedTls() {}

    /** A self-signed key for 127.0.0.1 in a PKCS12 keystore, its certificate as PEM, and a context trusting it. */
    static SSLContext create(Path keystore, Path pem) {
        SelfSignedCertificate certificate = SelfSignedCertificate.create(keystore);
        certificate.writePem(pem);
        return certificate.trustingContext();
    }
}
