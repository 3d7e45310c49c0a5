package dev.rolloutingest.table.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.table.TableLocation;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Lance's Azure storage options (and AZURE_* env vars) read as lance-core reads them: account, endpoint, credential. */
class AzureOptionsTest {
    private static AzureOptions of(String uri, Map<String, String> options) {
        return AzureOptions.of(new TableLocation(uri, options), Map.of());
    }

    @Test
    void anAzUriTakesItsAccountFromTheOptionsAndItsEndpointFromTheAccount() {
        AzureOptions az = of(
                "az://rollouts/team/table/",
                Map.of("azure_storage_account_name", "acct", "azure_storage_account_key", "a2V5"));
        assertThat(az.account()).isEqualTo("acct");
        assertThat(az.container()).isEqualTo("rollouts");
        assertThat(az.prefix()).isEqualTo("team/table");
        assertThat(az.endpoint()).isEqualTo("https://acct.blob.core.windows.net");
        assertThat(az.credential()).isEqualTo(new AzureOptions.AccountKey("a2V5"));
    }

    @Test
    void anAbfssUriNamesTheAccountWhoseBlobEndpointHoldsItsFiles() {
        AzureOptions adls = of("abfss://lake@acct.dfs.core.windows.net/rollouts", Map.of("sas_token", "?sv=1&sig=x"));
        assertThat(adls.account()).isEqualTo("acct");
        assertThat(adls.container()).isEqualTo("lake");
        assertThat(adls.prefix()).isEqualTo("rollouts");
        assertThat(adls.endpoint()).isEqualTo("https://acct.blob.core.windows.net");
        assertThat(adls.credential()).isEqualTo(new AzureOptions.SasToken("sv=1&sig=x"));
    }

    @Test
    void theCredentialIsChosenInLanceCoresOrder() {
        Map<String, String> all = Map.of(
                "account_name", "acct",
                "azure_storage_token", "bearer",
                "access_key", "a2V5",
                "azure_storage_sas_key", "sv=1",
                "azure_client_id", "app",
                "azure_client_secret", "secret",
                "azure_tenant_id", "tenant");
        assertThat(of("az://c", all).credential()).isInstanceOf(AzureOptions.BearerToken.class);
        Map<String, String> noToken = new java.util.HashMap<>(all);
        noToken.remove("azure_storage_token");
        assertThat(of("az://c", noToken).credential()).isInstanceOf(AzureOptions.AccountKey.class);
        noToken.remove("access_key");
        assertThat(of("az://c", noToken).credential())
                .as("a whole service principal before a SAS")
                .isEqualTo(new AzureOptions.EntraId("tenant", "app", "secret", null, null));
        noToken.remove("azure_client_secret");
        assertThat(of("az://c", noToken).credential()).isEqualTo(new AzureOptions.SasToken("sv=1"));
        noToken.remove("azure_storage_sas_key");
        assertThat(of("az://c", noToken).credential())
                .as("nothing given: the default chain, a client id picking the managed identity")
                .isEqualTo(new AzureOptions.EntraId("tenant", "app", null, null, null));
    }

    @Test
    void envVarsFillWhatTheOptionsLackButNeverOverrideThem() {
        Map<String, String> env = Map.of("AZURE_STORAGE_ACCOUNT_NAME", "fromenv", "AZURE_STORAGE_ACCOUNT_KEY", "ZW52");
        AzureOptions fromEnv = AzureOptions.of("az://c/t", Map.of(), env);
        assertThat(fromEnv.account()).isEqualTo("fromenv");
        assertThat(fromEnv.credential()).isEqualTo(new AzureOptions.AccountKey("ZW52"));
        AzureOptions given =
                AzureOptions.of(new TableLocation("az://c/t", Map.of("azure_storage_account_name", "given")), env);
        assertThat(given.account()).isEqualTo("given");
    }

    @Test
    void anEndpointOptionIsUsedAsItIsButTheEmulatorFlagWinsAsInLanceCore() {
        AzureOptions custom = of(
                "az://c/t",
                Map.of(
                        "azure_storage_account_name",
                        "devstoreaccount1",
                        "azure_endpoint",
                        "http://127.0.0.1:4242/devstoreaccount1/"));
        assertThat(custom.endpoint()).isEqualTo("http://127.0.0.1:4242/devstoreaccount1");
        AzureOptions emulator = of(
                "az://c/t", Map.of("azure_storage_use_emulator", "true", "azure_endpoint", "http://127.0.0.1:4242/x"));
        assertThat(emulator.account()).isEqualTo(AzureOptions.EMULATOR_ACCOUNT);
        assertThat(emulator.endpoint()).isEqualTo("http://127.0.0.1:10000/devstoreaccount1");
        assertThat(emulator.credential()).isEqualTo(new AzureOptions.AccountKey(AzureOptions.EMULATOR_KEY));
    }

    @Test
    void anAzUriWithoutAnAccountFailsNamingTheOption() {
        assertThatThrownBy(() -> of("az://rollouts/table", Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("azure_storage_account_name")
                .hasMessageContaining("abfss://rollouts@ACCOUNT.dfs.core.windows.net/table");
    }

    @Test
    void secretsAreNeverPrinted() {
        AzureOptions az = of(
                "az://c/t",
                Map.of("azure_storage_account_name", "acct", "azure_storage_sas_token", "sv=1&sig=very-secret"));
        assertThat(az.toString()).doesNotContain("very-secret");
        assertThat(new AzureOptions.EntraId("t", "c", "hush", null, null).toString())
                .doesNotContain("hush");
    }
}
